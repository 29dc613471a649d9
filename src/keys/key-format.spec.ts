import { generateApiKey, hashApiKey, isWellFormedApiKey } from './key-format';

describe('key-format', () => {
  it('generates well-formed keys of the documented shape', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^gwk_[0-9A-Za-z]{49}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('detects a changed character through the checksum', () => {
    const key = generateApiKey();
    const tampered = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    expect(isWellFormedApiKey(tampered)).toBe(false);
  });

  it.each(['', 'sk-abc', `gwk_${'a'.repeat(48)}`, `xyz_${'a'.repeat(49)}`])('rejects %p', (key) => {
    expect(isWellFormedApiKey(key)).toBe(false);
  });

  it('hashes with SHA-256 hex', () => {
    expect(hashApiKey('gwk_x')).toMatch(/^[0-9a-f]{64}$/);
  });
});
