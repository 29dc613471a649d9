import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { AzureOpenAiProviderConfig } from './azure-openai.config';
import { ChatChunk } from '../chat-contract';
import { azureErrorMessage } from './azure-openai-errors';
import { azureHooks, withoutFilterOnlyChunks } from './azure-openai.provider';

const config = (fields: Record<string, unknown> = {}) =>
  plainToInstance(AzureOpenAiProviderConfig, { type: 'azure-openai', base_url: 'https://res.openai.azure.com', api_version: '2024-10-21', api_key_env: 'AZ_KEY', ...fields }, { exposeDefaultValues: true });

describe('azureHooks', () => {
  it('puts the deployment in the path and the api-version in the query of each operation', () => {
    const sut = azureHooks(config(), {});
    expect(sut.path('chat', 'gpt-4o-prod')).toBe('/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21');
    expect(sut.path('chat_stream', 'gpt-4o-prod')).toBe('/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21');
    expect(sut.path('transcription', 'whisper')).toBe('/openai/deployments/whisper/audio/transcriptions?api-version=2024-10-21');
    expect(sut.path('speech', 'tts')).toBe('/openai/deployments/tts/audio/speech?api-version=2024-10-21');
    expect(sut.path('chat', 'a b/c')).toBe('/openai/deployments/a%20b%2Fc/chat/completions?api-version=2024-10-21');
  });

  it('sends the key in api-key, never as a bearer, and nothing without a key', () => {
    const request = { method: 'POST' as const, path: '/x', body: '{}' };
    expect(azureHooks(config(), { AZ_KEY: 'k-123' }).auth.headers(request)).toEqual({ 'api-key': 'k-123' });
    expect(azureHooks(config(), {}).auth.headers(request)).toEqual({});
  });
});

describe(azureErrorMessage.name, () => {
  const filtered = (innererror: unknown) => ({ error: { code: 'content_filter', param: 'prompt', message: 'The response was filtered…', innererror } });

  it('names each filtered category with its severity, or as detected', () => {
    const body = filtered({
      code: 'ResponsibleAIPolicyViolation',
      content_filter_result: {
        hate: { filtered: true, severity: 'high' },
        self_harm: { filtered: false, severity: 'safe' },
        violence: { filtered: true, severity: 'medium' },
        jailbreak: { filtered: true, detected: true },
        custom_blocklists: { filtered: true, details: [] },
      },
    });
    expect(azureErrorMessage(400, body)).toBe("The prompt was filtered by Azure OpenAI's content filter: hate (high), violence (medium), jailbreak (detected), custom_blocklists.");
  });

  it('reads content_filter_results too, and says the prompt was filtered when no category is readable', () => {
    expect(azureErrorMessage(400, filtered({ content_filter_results: { sexual: { filtered: true, severity: 'low' } } }))).toContain('sexual (low)');
    expect(azureErrorMessage(400, filtered(undefined))).toBe("The prompt was filtered by Azure OpenAI's content filter.");
    expect(azureErrorMessage(400, filtered({ content_filter_result: ['not', 'an', 'object'] }))).toBe("The prompt was filtered by Azure OpenAI's content filter.");
  });

  it('leaves other errors to the transport (null)', () => {
    expect(azureErrorMessage(400, { error: { code: 'BadRequest', message: 'API version not supported' } })).toBeNull();
    expect(azureErrorMessage(429, filtered({}))).toBeNull();
    expect(azureErrorMessage(400, 'not json')).toBeNull();
    expect(azureErrorMessage(400, undefined)).toBeNull();
    expect(azureErrorMessage(400, { error: 'text' })).toBeNull();
  });
});

describe(withoutFilterOnlyChunks.name, () => {
  async function* from(chunks: object[]): AsyncGenerator<ChatChunk> {
    for (const chunk of chunks) yield chunk as ChatChunk;
  }

  it('drops the chunks with no choice and no usage (prompt_filter_results), keeping the usage chunk and every choice', async () => {
    const promptFilter = { choices: [], id: '', model: '', object: '', created: 0, prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }] };
    const delta = { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' }, content_filter_results: {} }] };
    const usage = { id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
    const nullUsage = { ...promptFilter, usage: null };
    const out: ChatChunk[] = [];
    for await (const chunk of withoutFilterOnlyChunks(from([promptFilter, nullUsage, delta, usage]))) out.push(chunk);
    expect(out).toEqual([delta, usage]);
  });
});
