/** The sizes a filter may reach, shared by the filter's parser and `$jsonSchema`'s (the contract's limits table). */
export const MAX_QUERY_DEPTH = 32;
export const MAX_QUERY_NODES = 1000;
export const MAX_IN_VALUES = 1000;
