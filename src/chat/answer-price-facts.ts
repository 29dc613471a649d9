import { AnswerPriceFacts, ChatChunk, ChatCompletion, PRICE_FACTS } from '../providers/chat-contract';

/**
 * What an answer (or a stream's chunks so far: `before`) reports about its price (DESIGN.md section 12.2): an
 * OpenAI-shaped object's own `service_tier`, and what a provider read from its native answer (PRICE_FACTS),
 * which wins. Undefined when nothing was reported.
 */
export function answerPriceFacts(answer: ChatCompletion | ChatChunk, before?: AnswerPriceFacts): AnswerPriceFacts | undefined {
  const tier = typeof answer.service_tier === 'string' ? answer.service_tier : undefined;
  const native = answer[PRICE_FACTS];
  // An OpenAI stream repeats its tier in every chunk: nothing new, nothing allocated.
  if (native === undefined && (tier === undefined || tier === before?.service_tier)) return before;
  const facts: AnswerPriceFacts = { ...before };
  if (tier !== undefined) facts.service_tier = tier;
  if (native) {
    if (native.service_tier !== undefined) facts.service_tier = native.service_tier;
    if (native.speed !== undefined) facts.speed = native.speed;
    if (native.inference_geo !== undefined) facts.inference_geo = native.inference_geo;
    if (native.tool_uses !== undefined) facts.tool_uses = { ...facts.tool_uses, ...native.tool_uses };
  }
  return facts;
}
