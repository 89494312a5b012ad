// Types of strait-samplers (index.js). The request and the record are those of the `strait`
// command line and of Python, with camelCase names here.

/** What to sample. Exactly one of `regex`, `grammar`, `jsonSchema`. */
export interface SampleRequest {
  /** A regular expression the whole output matches. */
  regex?: string;
  /** A grammar's text: Lark, GBNF or a regex, detected unless `grammarFormat` says. */
  grammar?: string;
  /** A JSON Schema, as an object or its text. */
  jsonSchema?: object | string;
  /** `lark`, `gbnf`, `regex`, `json-schema`, ... when detection should not decide. */
  grammarFormat?: string;
  /** The prompt (a GGUF model needs one; toy and function models take none). */
  prompt?: string;
  /** Wrap the prompt in the model's chat template. */
  chat?: boolean;
  /** The sampler: `cars` (default), `auto`, `awrs-smc`, `smc-gcd`, `mcmc-restart`, `lcd`, ... */
  method?: string;
  /** Samples, chains or SMC runs (default 1). */
  n?: number;
  /** Seed of every random choice (default 0): the same seed, the same samples as the CLI. */
  seed?: number;
  /** Most tokens in one sequence, EOS included (default 32; `enumerate`: 16). */
  maxTokens?: number;
  /** SMC particles per run (default 8). */
  particles?: number;
  /** MCMC steps per chain (default 10). */
  steps?: number;
  /** Rejection samplers: generations drawn in lockstep (default 1). */
  batch?: number;
  /** Exact samplers give up after this many generations in a row without a valid one. */
  maxGenerations?: number;
  /** Exact samplers stop after this many generations in all, keeping what they found. */
  generationCap?: number;
  /** Where P-GCD's HMM work runs: `burn-flex` (default), `burn-flex-f32` or `cpu`. */
  hmmEngine?: string;
}

/** A sampler's event, as the page animates it (`type`: `token`, `rejected`, `trie_insert`,
 *  `mcmc_proposal`, `particles_extended`, `resampled`, `estimate`, ...). */
export interface SamplerEvent {
  type: string;
  [field: string]: unknown;
}

/** `sample`'s options: the request, and what to call as the run goes. */
export interface SampleOptions extends SampleRequest {
  /** Called with every event as it happens. An exception it throws ends the run with it. */
  onEvent?: (event: SamplerEvent) => void;
  /** Stops the run (it rejects with "stopped: ..."). */
  signal?: AbortSignal;
}

/** One output sample (a line of `strait sample`). */
export interface SampleRecord {
  text: string;
  tokens: number[];
  /** log P(tokens) under the unconstrained model. */
  logp: number;
  /** Whether it satisfies the constraint and ended. */
  valid: boolean;
  /** Importance weight, where the sampler has one (SMC: normalized within its run). */
  weight: number | null;
  lm_calls: number;
  forward_tokens: number;
  constraint_checks: number;
  elapsed_ms: number;
  /** Which SMC run or MCMC chain it belongs to. */
  run?: number;
}

/** One sequence of an exact distribution (a line of `strait enumerate`). */
export interface Enumerated {
  text: string;
  tokens: number[];
  logp: number;
  /** Its probability under P^L. */
  p: number;
}

/** log P(text · EOS | prompt), token by token (`strait score`). */
export interface Scored {
  text: string;
  tokens: number[];
  logp: number;
  token_logps: number[];
}

/** A model the samplers run over. */
export class Model {
  /** A GGUF model from a URL, a file path (node) or its bytes. `backend`: `auto` (default:
   *  WebGPU on a hardware adapter, else Strait's CPU forward pass in wasm), `webgpu`, `cpu`. */
  static load(source: string | URL | Uint8Array | ArrayBuffer, options?: { backend?: 'auto' | 'webgpu' | 'cpu' }): Promise<Model>;
  /** Where the model runs: `CPU (wasm)`, `WebGPU (adapter)`, ... */
  readonly engine: string;
  /** A toy model: `gsk`, `random:SEED`, `letters:N:SEED`. */
  static toy(name: string): Model;
  readonly vocabSize: number;
  readonly eos: number;
  readonly kind: 'gguf' | 'toy' | 'function';
  /** A token's bytes. */
  token(id: number): Uint8Array;
  sample(options: SampleOptions): Promise<SampleRecord[]>;
  enumerate(options: SampleRequest): Promise<Enumerated[]>;
  score(options: { text: string; prompt?: string; chat?: boolean }): Promise<Scored>;
  /** Next-token log-probabilities after each prefix of generated tokens. */
  logprobs(prefixes: (Uint32Array | number[])[], options?: { prompt?: string; chat?: boolean }): Promise<Float64Array[]>;
  free(): void;
}

/** Your model, as a function. */
export interface FunctionModelOptions {
  /** Each token's bytes: strings (UTF-8) or Uint8Arrays. */
  vocab: (string | Uint8Array)[];
  /** The end token's id. */
  eos: number;
  /** One vector of natural-log probabilities over the vocabulary per prefix (the tokens
   *  generated so far: the function holds its own prompt). */
  logprobs: (prefixes: Uint32Array[]) => Promise<(Float32Array | Float64Array | number[])[]> | (Float32Array | Float64Array | number[])[];
}

export class FunctionModel extends Model {
  constructor(options: FunctionModelOptions);
}
