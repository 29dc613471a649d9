import { CatalogEntry, ProviderConfig } from '../../config/gateway-config.schema';
import { UpstreamFailure } from '../upstream-failure';
import {
  ChatRequestBody,
  SpeechAudio,
  SpeechInput,
  TranscriptionInput,
  UpstreamChatJson,
  UpstreamChatStream,
  UpstreamProvider,
  VerboseTranscription,
} from '../upstream-provider';
import { echoReply, echoWords } from './dev-echo';
import { synthesizeSpeech } from './local-speech.engine';
import { transcribeLocally } from './local-transcription.engine';

/** The built-in offline provider: dev-echo chat, espeak-ng speech, pocketsphinx transcription. */
export class LocalProvider implements UpstreamProvider {
  constructor(
    readonly name: string,
    private readonly config: ProviderConfig,
  ) {}

  async chat(model: CatalogEntry, body: ChatRequestBody): Promise<UpstreamChatJson> {
    assertDevEcho(model);
    const reply = await echoReply(body);
    return {
      body: {
        id: reply.id,
        object: 'chat.completion',
        created: reply.created,
        model: model.upstream_model,
        choices: [{ index: 0, message: { role: 'assistant', content: reply.content, refusal: null }, logprobs: null, finish_reason: reply.finishReason }],
        usage: usageOf(reply.promptTokens, reply.completionTokens),
      },
    };
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    assertDevEcho(model);
    const reply = await echoReply(body);
    const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({
      id: reply.id,
      object: 'chat.completion.chunk',
      created: reply.created,
      model: model.upstream_model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
    const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    return (async function* () {
      yield chunk({ role: 'assistant', content: '', refusal: null }, null);
      for (const word of echoWords(reply.content)) {
        if (signal.aborted) return;
        // Yield to the event loop between words, as a real upstream's chunks arrive one by one.
        await new Promise((resolve) => setImmediate(resolve));
        yield chunk({ content: word }, null);
      }
      yield chunk({}, reply.finishReason);
      if (includeUsage) {
        yield { ...chunk({}, null), choices: [], usage: usageOf(reply.promptTokens, reply.completionTokens) };
      }
    })();
  }

  transcribe(model: CatalogEntry, input: TranscriptionInput, signal: AbortSignal): Promise<VerboseTranscription> {
    return transcribeLocally(model, input, signal, this.config.timeouts.request_ms);
  }

  speech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal): Promise<SpeechAudio> {
    return synthesizeSpeech(model, input, signal, this.config.timeouts.request_ms);
  }

  async close(): Promise<void> {}
}

function assertDevEcho(model: CatalogEntry): void {
  if (model.upstream_model !== 'dev-echo') {
    throw new UpstreamFailure('rejected', `The local provider has no chat model "${model.upstream_model}"; it serves dev-echo.`, 404);
  }
}

function usageOf(promptTokens: number, completionTokens: number) {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}
