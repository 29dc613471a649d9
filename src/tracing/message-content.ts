/**
 * Prompts and completions as OpenTelemetry's GenAI conventions record them (`gen_ai.input.messages`,
 * `gen_ai.output.messages`: JSON of `{role, parts: [{type, content}]}`), from the bodies of the three dialects
 * (chat's `messages`, Messages' `system` and `messages`, Responses' `instructions` and `input`; their answers'
 * `choices`, `content` and `output`). Bounded: at most MAX_MESSAGES messages, MAX_TEXT characters of text in all.
 * Parts that are not text (images, audio, tool calls) are named by their type, without their data.
 */

const MAX_MESSAGES = 64;
const MAX_TEXT = 16 * 1024;

interface MessagePart {
  type: string;
  content?: string;
}

interface CapturedMessage {
  role: string;
  parts: MessagePart[];
  finish_reason?: string;
}

type Json = Record<string, unknown>;

/** The request's messages as JSON text; null when the body has none. */
export function inputMessages(body: unknown): string | null {
  if (!isObject(body)) return null;
  const sources: unknown[] = [];
  if (body.system !== undefined) sources.push({ role: 'system', content: body.system });
  if (typeof body.instructions === 'string') sources.push({ role: 'system', content: body.instructions });
  if (Array.isArray(body.messages)) sources.push(...body.messages);
  if (typeof body.input === 'string') sources.push({ role: 'user', content: body.input });
  else if (Array.isArray(body.input)) sources.push(...body.input);
  return captured(sources);
}

/** The answer's messages as JSON text (a JSON answer of any of the three dialects); null when it has none. */
export function outputMessages(answer: unknown): string | null {
  if (!isObject(answer)) return null;
  if (Array.isArray(answer.choices)) {
    return captured(answer.choices.map((choice) => (isObject(choice) ? { ...asObject(choice.message), finish_reason: choice.finish_reason } : null)));
  }
  if (Array.isArray(answer.content)) return captured([{ role: 'assistant', content: answer.content, finish_reason: answer.stop_reason }]);
  if (Array.isArray(answer.output)) return captured(answer.output.filter((item) => isObject(item) && item.type === 'message'));
  return null;
}

function captured(sources: unknown[]): string | null {
  const budget = { left: MAX_TEXT };
  const messages: CapturedMessage[] = [];
  for (const source of sources.slice(-MAX_MESSAGES)) {
    if (!isObject(source)) continue;
    const message: CapturedMessage = { role: typeof source.role === 'string' ? source.role : typeof source.type === 'string' ? source.type : 'unknown', parts: partsOf(source.content, budget) };
    if (typeof source.finish_reason === 'string') message.finish_reason = source.finish_reason;
    messages.push(message);
  }
  return messages.length > 0 ? JSON.stringify(messages) : null;
}

function partsOf(content: unknown, budget: { left: number }): MessagePart[] {
  if (typeof content === 'string') return [textPart(content, budget)];
  if (!Array.isArray(content)) return [];
  return content.slice(0, MAX_MESSAGES).map((part) => {
    if (typeof part === 'string') return textPart(part, budget);
    if (!isObject(part)) return { type: 'unknown' };
    if (typeof part.text === 'string') return textPart(part.text, budget);
    return { type: typeof part.type === 'string' ? part.type : 'unknown' };
  });
}

/** A text part, cut to what is left of the budget. */
function textPart(text: string, budget: { left: number }): MessagePart {
  const content = text.length > budget.left ? text.slice(0, budget.left) : text;
  budget.left -= content.length;
  return { type: 'text', content };
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(value: unknown): Json {
  return isObject(value) ? value : {};
}
