// Strait's samplers for JavaScript (browsers and node). The wasm module (wasm/strait.js,
// built by `cargo xtask npm` with wasm-bindgen) holds the samplers and our CPU forward pass;
// this module loads it once, at import, and gives the API its JavaScript shape: camelCase
// options, `await Model.load(urlOrBytes)`, `new FunctionModel({ vocab, eos, logprobs })`.
// The request and the records are the `strait` command line's and Python's
// (sampler_core::request in the repository).
import init, { Model as Raw } from './wasm/strait.js';

const inNode = typeof process !== 'undefined' && Boolean(process.versions?.node);

/** Reads a file: URL in node (fetch cannot). */
async function readFileUrl(url) {
  const { readFile } = await import('node:fs/promises');
  return new Uint8Array(await readFile(url));
}

// The wasm, compiled once when this module is imported.
{
  const wasm = new URL('./wasm/strait_bg.wasm', import.meta.url);
  await init({ module_or_path: inNode && wasm.protocol === 'file:' ? await readFileUrl(wasm) : wasm });
}

/** `maxTokens` → `max_tokens`: the request's names in Rust. */
const snake = (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The request the wasm reads: snake_case keys, a JSON Schema object as its text, and the
 *  callbacks apart. */
function request(options = {}) {
  const { onEvent, signal, ...rest } = options;
  const req = {};
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined) continue;
    req[snake(k)] = k === 'jsonSchema' && typeof v !== 'string' ? JSON.stringify(v) : v;
  }
  return { req, onEvent, signal };
}

/** Where a model's bytes come from: bytes, a URL, or (in node) a file path. */
async function bytesOf(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  const base = globalThis.location?.href ?? (inNode ? `file://${process.cwd()}/` : undefined);
  const url = source instanceof URL ? source : new URL(String(source), base);
  if (url.protocol === 'file:') return readFileUrl(url);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url.href}: HTTP ${response.status} ${response.statusText}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** A model the samplers run over: a GGUF file on Strait's CPU forward pass
 *  (`Model.load`), a toy model (`Model.toy`), or your own (`FunctionModel`). */
export class Model {
  #raw;

  /** @internal Use `Model.load`, `Model.toy` or `new FunctionModel(...)`. */
  constructor(raw) {
    if (!(raw instanceof Raw)) throw new TypeError('use Model.load(urlOrBytes), Model.toy(name) or new FunctionModel({ vocab, eos, logprobs })');
    this.#raw = raw;
  }

  /** A GGUF model from a URL, a file path (node) or its bytes. `backend`: `auto` (the
   *  default: WebGPU on a hardware adapter, else the CPU in wasm), `webgpu` or `cpu`. */
  static async load(source, { backend = 'auto' } = {}) {
    const gpu = globalThis.navigator?.gpu;
    if (!['auto', 'webgpu', 'cpu'].includes(backend)) throw new Error(`unknown backend ${JSON.stringify(backend)}: auto, webgpu or cpu`);
    if (backend === 'webgpu' && !gpu) throw new Error('WebGPU: this JavaScript runtime has no navigator.gpu');
    let hint = '';
    if (backend !== 'cpu' && gpu) {
      // The browser's own words for its adapter (wgpu sees none there): a software one
      // (SwiftShader) is slower than the CPU path.
      const adapter = await gpu.requestAdapter().catch(() => null);
      const info = adapter?.info ?? {};
      hint = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
    }
    const bytes = await bytesOf(source);
    return new Model(await Raw.fromBytes(bytes, gpu ? backend : 'cpu', hint));
  }

  /** Where the model runs: `CPU (wasm)`, `WebGPU (adapter)`, a toy or a function. */
  get engine() {
    return this.#raw.engine;
  }

  /** A toy model: `gsk`, `random:SEED`, `letters:N:SEED`. */
  static toy(name) {
    return new Model(Raw.toy(name));
  }

  /** How many tokens the vocabulary holds. */
  get vocabSize() {
    return this.#raw.vocabSize;
  }

  /** The end token's id. */
  get eos() {
    return this.#raw.eos;
  }

  /** `gguf`, `toy` or `function`. */
  get kind() {
    return this.#raw.kind;
  }

  /** A token's bytes. */
  token(id) {
    return this.#raw.token(id);
  }

  /** Samples under one constraint; resolves to one record per output sample. */
  sample(options) {
    const { req, onEvent, signal } = request(options);
    return this.#raw.sample(req, onEvent, signal);
  }

  /** Exact P^L of a finite language, most probable first. */
  enumerate(options) {
    const { req } = request(options);
    return this.#raw.enumerate(req);
  }

  /** log P(text · EOS | prompt), token by token. */
  score({ text, prompt = '', chat = false }) {
    return this.#raw.score(String(text), prompt, chat);
  }

  /** The next-token log-probabilities after each prefix of generated tokens. */
  logprobs(prefixes, { prompt = '', chat = false } = {}) {
    return this.#raw.logprobs(prefixes, prompt, chat);
  }

  /** Frees the model's memory now (else when it is garbage-collected). */
  free() {
    this.#raw.free();
  }
}

/** Any language model, as a function: `vocab` holds each token's bytes (strings or
 *  Uint8Arrays), `eos` the end token's id, and `logprobs(prefixes)` returns (or resolves
 *  to) one vector of natural-log probabilities over the vocabulary per prefix. */
export class FunctionModel extends Model {
  constructor({ vocab, eos, logprobs }) {
    if (!Array.isArray(vocab)) throw new TypeError('vocab must be an array of token strings or Uint8Arrays');
    if (typeof logprobs !== 'function') throw new TypeError('logprobs must be a function');
    super(Raw.fromFunction(vocab, eos, logprobs));
  }
}
