/** A job failure that retrying cannot mend: the input (or the output's refusal) is at fault. */
export class BadInput extends Error {}
