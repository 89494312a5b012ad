// The npm package in node against the `strait` binary on the same job: SmolLM2, the date
// example (a regex), 40 masked samples (`lcd`), seed 1, each run a fresh process that loads
// the model and samples, interleaved (the machine's speed drifts). The wasm forward pass
// runs on one thread, so the CLI runs twice per round: on one thread and on every core.
// Prints the medians and the ratios, and checks that all drew the same samples.
//
//   cargo xtask npm && cargo build --release -p cli
//   node js/bench/vs_cli.mjs [rounds] [path/to/strait]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODEL = join(ROOT, 'assets/models/SmolLM2-135M-Instruct.Q4_1.gguf');
const REGEX = readFileSync(join(ROOT, 'assets/examples/date.regex'), 'utf8').trim();
const PROMPT = readFileSync(join(ROOT, 'assets/examples/date.prompt.txt'), 'utf8');
const PACKAGE = pathToFileURL(join(ROOT, 'target/npm/strait-samplers/index.js')).href;
const rounds = Number(process.argv[2] ?? 3);
const bin = process.argv[3] ?? join(ROOT, 'target/release/strait');

const script = `import { Model } from ${JSON.stringify(PACKAGE)};
const m = await Model.load(${JSON.stringify(MODEL)});
const out = await m.sample({ regex: ${JSON.stringify(REGEX)}, prompt: ${JSON.stringify(PROMPT)}, chat: true,
  method: 'lcd', n: 40, seed: 1, maxTokens: 16 });
console.log(JSON.stringify(out.map((s) => s.tokens)));`;

/** Seconds of one run and the tokens it drew. */
function timed(cmd, args, input) {
  const t = performance.now();
  const out = execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'ignore'], maxBuffer: 1 << 26 });
  const s = (performance.now() - t) / 1e3;
  const tokens = cmd === 'node' ? JSON.parse(out) : out.trim().split('\n').map((l) => JSON.parse(l).tokens);
  return { s, tokens };
}

const cli = (threads) => ['--threads', String(threads), 'sample', '--model', MODEL, '--regex', REGEX, '--prompt', PROMPT,
  '--chat', '--method', 'lcd', '--n', '40', '--seed', '1', '--max-tokens', '16'];
const cores = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
const times = { node: [], cli1: [], cliAll: [] };
let same = true;
for (let r = 0; r < rounds; r++) {
  const a = timed('node', ['--input-type=module', '-'], script);
  const b = timed(bin, cli(1));
  const c = timed(bin, cli(cores));
  same &&= JSON.stringify(a.tokens) === JSON.stringify(b.tokens) && JSON.stringify(b.tokens) === JSON.stringify(c.tokens);
  times.node.push(a.s);
  times.cli1.push(b.s);
  times.cliAll.push(c.s);
  console.log(`round ${r + 1}: node ${a.s.toFixed(2)} s, CLI 1 thread ${b.s.toFixed(2)} s, CLI ${cores} threads ${c.s.toFixed(2)} s`);
}
const median = (v) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)];
const [n, c1, ca] = [median(times.node), median(times.cli1), median(times.cliAll)];
console.log(`medians of ${rounds}: node (wasm, 1 thread) ${n.toFixed(2)} s · CLI 1 thread ${c1.toFixed(2)} s · CLI ${cores} threads ${ca.toFixed(2)} s`);
console.log(`node / CLI: ${(n / c1).toFixed(2)}× (1 thread), ${(n / ca).toFixed(2)}× (${cores} threads); the same samples: ${same}`);
