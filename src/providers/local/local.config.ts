import { ProviderConfigBase } from '../../config/provider-configs.schema';

/** The built-in engines: dev-echo chat, espeak-ng speech, pocketsphinx transcription (`timeouts.request_ms` bounds an engine's run). */
export class LocalProviderConfig extends ProviderConfigBase {
  declare type: 'local';
}
