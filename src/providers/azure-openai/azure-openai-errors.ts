/**
 * Azure OpenAI's error answers, read beyond `error.message`: a prompt its content filter refused is a 400 with
 * `error.code: "content_filter"` whose `innererror.content_filter_result` names each category, filtered or not
 * (https://learn.microsoft.com/azure/ai-services/openai/concepts/content-filter, "Scenario details"):
 * `{hate: {filtered, severity}, jailbreak: {filtered, detected}, …}`. The client learns which categories.
 */
export function azureErrorMessage(status: number, body: unknown): string | null {
  if (status !== 400 || !isObject(body) || !isObject(body.error) || body.error.code !== 'content_filter') return null;
  const inner = isObject(body.error.innererror) ? body.error.innererror : {};
  // The documented examples spell it content_filter_result; the API's JSON schema content_filter_results.
  const results = inner.content_filter_result ?? inner.content_filter_results;
  const categories = isObject(results) ? filteredCategories(results) : [];
  const which = categories.length > 0 ? `: ${categories.join(', ')}` : '';
  return `The prompt was filtered by Azure OpenAI's content filter${which}.`;
}

/** The categories marked `filtered: true`, each with its severity (`hate (high)`) or, for detections, `(detected)`. */
function filteredCategories(results: Record<string, unknown>): string[] {
  return Object.entries(results).flatMap(([category, result]) => {
    if (!isObject(result) || result.filtered !== true) return [];
    if (typeof result.severity === 'string') return [`${category} (${result.severity})`];
    if (result.detected === true) return [`${category} (detected)`];
    return [category];
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
