import { CatalogEntry } from './gateway-config.schema';

/**
 * The checks of a catalog entry's voices that need more than one field: every `voice_aliases` value names
 * one of the model's `voices`, no alias hides a voice, and a speech model with a `local` upstream (any of
 * its deployments) lists its voices, so that only configured names ever reach espeak-ng. Problems are
 * named `catalog[i].field[.alias]` like the rest.
 */
export function voiceProblems(entry: CatalogEntry, localEngine: boolean, field: string): string[] {
  const problems: string[] = [];
  // Checked even when the field checks failed: a malformed `voices` is reported there, not here.
  const voices: unknown[] | undefined = Array.isArray(entry.voices) ? entry.voices : undefined;
  if (entry.kind === 'speech' && localEngine && entry.voices === undefined) {
    problems.push(`${field}.voices: required for a speech model of a local provider (its engine speaks only configured voices)`);
  }
  const aliases = entry.voice_aliases;
  if (aliases === undefined || aliases === null || typeof aliases !== 'object' || Array.isArray(aliases)) return problems;
  if (entry.kind !== 'speech') return [...problems, `${field}.voice_aliases: only speech models have voices`];
  const names = Object.keys(aliases);
  if (names.length === 0) problems.push(`${field}.voice_aliases: must not be empty (leave it out instead)`);
  for (const name of names) {
    const target: unknown = aliases[name];
    const at = `${field}.voice_aliases.${name}`;
    if (typeof target !== 'string' || target === '') {
      problems.push(`${at}: must be a non-empty string naming one of the model's voices (got ${JSON.stringify(target) ?? String(target)})`);
    } else if (voices && !voices.includes(target)) {
      problems.push(`${at}: "${target}" is not one of the model's voices (${voices.join(', ')})`);
    }
    if (name === '' || voices?.includes(name)) {
      problems.push(`${at}: an alias must not be empty or the name of one of the model's own voices`);
    }
  }
  return problems;
}
