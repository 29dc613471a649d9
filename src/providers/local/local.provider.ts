import { CatalogEntry } from '../../config/gateway-config.schema';
import { providerType } from '../provider-type';
import { UpstreamFailure } from '../upstream-failure';
import {
  ChatRequestBody,
  ChatUpstream,
  SpeechAudio,
  SpeechInput,
  SpeechUpstream,
  TranscriptionInput,
  TranscriptionUpstream,
  UpstreamChatJson,
  UpstreamChatStream,
  VerboseTranscription,
} from '../upstream-provider';
import { echoReply } from './dev-echo';
import { choiceCount, echoChunks, echoCompletion } from './dev-echo-answer';
import { LocalProviderConfig } from './local.config';
import { synthesizeSpeech } from './local-speech.engine';
import { transcribeLocally } from './local-transcription.engine';

/** The built-in offline provider: dev-echo chat, espeak-ng speech, pocketsphinx transcription. */
export class LocalProvider implements ChatUpstream, TranscriptionUpstream, SpeechUpstream {
  constructor(
    readonly name: string,
    private readonly config: LocalProviderConfig,
  ) {}

  async chat(model: CatalogEntry, body: ChatRequestBody): Promise<UpstreamChatJson> {
    assertDevEcho(model);
    return { body: echoCompletion(await echoReply(body, model.max_output_tokens!), model.upstream_model, choiceCount(body)) };
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    assertDevEcho(model);
    const includeUsage = body.stream_options?.include_usage === true;
    return echoChunks(await echoReply(body, model.max_output_tokens!), model.upstream_model, choiceCount(body), includeUsage, signal);
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

/** The `local` provider type: the built-in engines, one for each kind. */
export const LOCAL = providerType({
  type: 'local',
  config: LocalProviderConfig,
  kinds: ['chat', 'transcription', 'speech'],
  create: (name, config) => new LocalProvider(name, config),
});
