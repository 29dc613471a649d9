import { redactedUrl } from './upstream-span';

describe(redactedUrl.name, () => {
  it('keeps the URL but its credentials: user, password and credential parameters', () => {
    expect(redactedUrl(new URL('https://user:pass@example.com/v1/chat?api-version=2024-10-21&key=secret&sig=abc'))).toBe(
      'https://REDACTED:REDACTED@example.com/v1/chat?api-version=2024-10-21&key=REDACTED&sig=REDACTED',
    );
    expect(redactedUrl(new URL('http://127.0.0.1:8000/v1/chat/completions'))).toBe('http://127.0.0.1:8000/v1/chat/completions');
  });
});
