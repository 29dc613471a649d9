import { InitialSchema1763870000000 } from './1763870000000-InitialSchema';

/** Every migration, in order. Listed explicitly so ts-node, jest and the built app share one list. */
export const MIGRATIONS = [InitialSchema1763870000000];
