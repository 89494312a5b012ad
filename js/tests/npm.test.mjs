// The npm package strait-samplers (built by `cargo xtask npm` into target/npm/), in node and
// in headless Chromium, against the `strait` command line and exact distributions:
// - the same request gives the CLI's samples at the same seed (a toy model, and SmolLM2's
//   GGUF through our CPU forward pass in wasm);
// - a FunctionModel (a bigram written in JavaScript) gives its exact P^L by `enumerate`,
//   CARS's samples pass a chi-square test against it, and a FunctionModel answering with a
//   toy model's own probabilities gives the toy's samples;
// - wrong requests and wrong answers end with messages that name the problem, an
//   AbortSignal stops a run, and events arrive while it runs;
// - a plain `<script type="module">` page imports the package from a local path;
// - the tarball of `npm pack` installs into an empty project without the network.
// STRAIT_NPM_DIR, STRAIT_NPM_TARBALL, STRAIT_BIN and STRAIT_MODEL override where these are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launch, servePlain } from '../../e2e/lib.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NPM_DIR = process.env.STRAIT_NPM_DIR ?? join(ROOT, 'target', 'npm', 'strait-samplers');
const TARBALL = process.env.STRAIT_NPM_TARBALL
  ?? join(dirname(NPM_DIR), readdirSync(dirname(NPM_DIR)).find((f) => f.endsWith('.tgz')) ?? 'missing.tgz');
const BIN = process.env.STRAIT_BIN
  ?? [join(ROOT, 'target', 'debug', 'strait'), join(ROOT, 'target', 'release', 'strait')].find(existsSync);
const MODEL = process.env.STRAIT_MODEL ?? join(ROOT, 'assets', 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');

const { Model, FunctionModel } = await import(pathToFileURL(join(NPM_DIR, 'index.js')).href);

/** `strait sample` with these flags: its records. */
function cli(args) {
  assert.ok(BIN, 'the strait binary (cargo build -p cli)');
  const out = execFileSync(BIN, ['sample', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

/** What a sample is, without its timing. */
const drawn = (rs) => rs.map((r) => ({ tokens: r.tokens, valid: r.valid, weight: r.weight, run: r.run ?? null }));

const GSK = '[01]{5}';

test('a toy model: the CLI\'s samples at the same seed (cars, awrs-smc, mcmc-restart)', async () => {
  const gsk = Model.toy('gsk');
  for (const [method, extra] of [['cars', []], ['awrs-smc', ['--particles', '4']], ['mcmc-restart', ['--steps', '3']]]) {
    const want = cli(['--model', 'toy:gsk', '--regex', GSK, '--method', method, '--n', '5', '--seed', '11', '--max-tokens', '8', ...extra]);
    const got = await gsk.sample({ regex: GSK, method, n: 5, seed: 11, maxTokens: 8, particles: 4, steps: 3 });
    assert.deepEqual(drawn(got), drawn(want), method);
    assert.deepEqual(Object.keys(got[0]).sort(), Object.keys(want[0]).sort(), 'the same record fields');
  }
});

test('SmolLM2 from its GGUF on the CPU forward pass in wasm: the CLI\'s samples at the same seed', async () => {
  const model = await Model.load(MODEL);
  assert.equal(model.kind, 'gguf');
  assert.equal(model.engine, 'CPU (wasm)', 'node has no WebGPU: auto takes the CPU');
  await assert.rejects(Model.load(MODEL, { backend: 'webgpu' }), /no navigator.gpu/);
  const request = ['--regex', '[0-9]{4}-[0-9]{2}-[0-9]{2}', '--prompt', "Reply with today's date in the format YYYY-MM-DD and nothing else.",
    '--chat', '--method', 'cars', '--n', '2', '--seed', '1', '--max-tokens', '12'];
  const want = cli(['--model', MODEL, ...request]);
  const t = performance.now();
  const got = await model.sample({ regex: '[0-9]{4}-[0-9]{2}-[0-9]{2}', prompt: "Reply with today's date in the format YYYY-MM-DD and nothing else.",
    chat: true, method: 'cars', n: 2, seed: 1, maxTokens: 12 });
  const ms = performance.now() - t;
  assert.deepEqual(got.map((r) => r.tokens), want.map((r) => r.tokens));
  for (const [g, w] of got.map((g, i) => [g, want[i]])) {
    assert.ok(Math.abs(g.logp - w.logp) < 1e-3, `log P ${g.logp} vs the CLI's ${w.logp}`);
  }
  console.log(`# figure: node, SmolLM2 in wasm: 2 exact date samples in ${ms.toFixed(0)} ms (${got.at(-1).lm_calls} LM calls); the CLI's: ${want.at(-1).elapsed_ms.toFixed(0)} ms`);
  model.free();
});

/** A bigram over a, b and EOS, as a function of the prefix's last token. */
const TABLE = { start: [0.5, 0.3, 0.2], 0: [0.1, 0.6, 0.3], 1: [0.2, 0.2, 0.6] };
const bigramRow = (p) => TABLE[p.length ? p[p.length - 1] : 'start'];
const bigram = (answer = (ps) => ps.map((p) => Float64Array.from(bigramRow(p), Math.log))) =>
  new FunctionModel({ vocab: ['a', 'b', ''], eos: 2, logprobs: answer });

test('a FunctionModel: its exact P^L by enumerate, and CARS\'s samples follow it (chi-square)', async () => {
  const model = bigram(async (ps) => ps.map((p) => Float64Array.from(bigramRow(p), Math.log)));
  const exact = await model.enumerate({ regex: '(ab|b|aab)' });
  // By hand: P(ab·EOS) = .5·.6·.6, P(b·EOS) = .3·.6, P(aab·EOS) = .5·.1·.6·.6.
  const raw = { ab: 0.5 * 0.6 * 0.6, b: 0.3 * 0.6, aab: 0.5 * 0.1 * 0.6 * 0.6 };
  const z = raw.ab + raw.b + raw.aab;
  assert.equal(exact.length, 3);
  for (const e of exact) assert.ok(Math.abs(e.p - raw[e.text] / z) < 1e-12, `${e.text}: ${e.p} vs ${raw[e.text] / z}`);
  const n = 3000;
  const samples = await model.sample({ regex: '(ab|b|aab)', method: 'cars', n, seed: 5 });
  const counts = {};
  for (const s of samples) counts[s.text] = (counts[s.text] ?? 0) + 1;
  const chi2 = exact.reduce((x, e) => x + ((counts[e.text] ?? 0) - n * e.p) ** 2 / (n * e.p), 0);
  // Two degrees of freedom: P(χ² > 13.8) = 0.001. A wrong weight (say, masking's) is far above.
  assert.ok(chi2 < 13.8, `chi-square ${chi2.toFixed(2)}: ${JSON.stringify(counts)}`);
  const masked = await model.sample({ regex: '(ab|b|aab)', method: 'lcd', n, seed: 5 });
  const m = {};
  for (const s of masked) m[s.text] = (m[s.text] ?? 0) + 1;
  const chiMasked = exact.reduce((x, e) => x + ((m[e.text] ?? 0) - n * e.p) ** 2 / (n * e.p), 0);
  assert.ok(chiMasked > 13.8, `token masking is biased here, and the test sees it (chi-square ${chiMasked.toFixed(1)})`);
});

test('a FunctionModel answering with a toy\'s own probabilities gives the toy\'s samples', async () => {
  const toy = Model.toy('random:3');
  const vocab = [...Array(toy.vocabSize).keys()].map((i) => toy.token(i));
  const fn = new FunctionModel({ vocab, eos: toy.eos, logprobs: (ps) => toy.logprobs(ps) });
  for (const method of ['cars', 'awrs-smc']) {
    const request = { regex: '(ab|ba|cab|abc|bca)', method, n: 6, seed: 9, maxTokens: 8, particles: 4 };
    assert.deepEqual(drawn(await fn.sample(request)), drawn(await toy.sample(request)), method);
  }
});

test('mistakes end with messages that name them; a signal stops a run; events arrive', async () => {
  const rejects = async (p, re) => assert.match((await p.then(() => ({ message: 'resolved' }), (e) => e)).message, re);
  await rejects(bigram().sample({ regex: 'ab', maxToken: 3 }), /unknown option `maxToken`.*maxTokens/);
  await rejects(bigram().sample({ regex: 'ab', n: 'three' }), /the request/);
  await rejects(bigram().sample({ regex: 'ab', method: 'carz' }), /carz/);
  await rejects(bigram().sample({ regex: 'ab', grammar: 'start: "a"' }), /one constraint only/);
  await rejects(bigram().sample({ grammar: 'start: "a" "b\n', grammarFormat: 'lark' }), /grammar:1:\d+/);
  await rejects(bigram().sample({ regex: 'ab', prompt: 'hello' }), /holds its own context/);
  await rejects(bigram((ps) => ps.map(() => [0, 0])).sample({ regex: 'ab' }), /prefix \[\] has 2 entries, not 3/);
  await rejects(bigram((ps) => ps.map(() => [NaN, 0, 0])).sample({ regex: 'ab' }), /log-probability NaN/);
  await rejects(bigram((ps) => ps.map(() => [1, 2, 3])).sample({ regex: 'ab' }), /not normalized/);
  await rejects(bigram(() => { throw new Error('boom'); }).sample({ regex: 'ab' }), /failed on the prefixes \[\]: boom/);
  await rejects(bigram(async () => 'nope').sample({ regex: 'ab' }), /not an array/);
  assert.throws(() => new FunctionModel({ vocab: ['a', 'b', ''], eos: 7, logprobs: () => [] }), /end token 7/);
  await assert.rejects(Model.load(join(tmpdir(), 'no-such-model.gguf')), /ENOENT|no such file/);
  await rejects(Model.load(new Uint8Array([1, 2, 3, 4])).then((m) => m), /GGUF|magic|file/i);
  const controller = new AbortController();
  controller.abort();
  await rejects(Model.toy('gsk').sample({ regex: GSK, n: 50, signal: controller.signal }), /stopped/);
  const events = [];
  await Model.toy('gsk').sample({ regex: GSK, method: 'awrs-smc', particles: 4, seed: 2, maxTokens: 8, onEvent: (e) => events.push(e.type) });
  assert.ok(events.includes('particles_extended') && events.includes('token'), [...new Set(events)].join(' '));
  await rejects(Model.toy('gsk').sample({ regex: GSK, onEvent: () => { throw new Error('from onEvent'); } }), /from onEvent/);
});

test('a plain <script type="module"> page imports the package from a local path', async () => {
  const want = cli(['--model', 'toy:gsk', '--regex', GSK, '--method', 'cars', '--n', '4', '--seed', '3', '--max-tokens', '8']);
  const site = mkdtempSync(join(tmpdir(), 'strait-npm-page-'));
  execFileSync('cp', ['-r', NPM_DIR, join(site, 'strait-samplers')]);
  writeFileSync(join(site, 'index.html'), `<!doctype html><meta charset="utf-8"><title>strait-samplers</title>
<pre id="out">loading</pre>
<script type="module">
  import { Model, FunctionModel } from './strait-samplers/index.js';
  const out = document.getElementById('out');
  try {
    const toy = await Model.toy('gsk').sample({ regex: '${GSK}', method: 'cars', n: 4, seed: 3, maxTokens: 8 });
    const fn = new FunctionModel({ vocab: ['a', 'b', ''], eos: 2,
      logprobs: async (ps) => ps.map(() => new Float32Array([Math.log(0.5), Math.log(0.25), Math.log(0.25)])) });
    const exact = await fn.enumerate({ regex: 'a|b' });
    out.textContent = JSON.stringify({ toy, exact });
  } catch (e) {
    out.textContent = 'error: ' + e.message;
  }
</script>`);
  const server = await servePlain(site, 'app');
  const b = await launch({ webgpu: false });
  try {
    await b.page.goto(server.url);
    await b.page.waitForFunction(() => document.getElementById('out').textContent !== 'loading', null, { timeout: 60_000 });
    const text = await b.page.textContent('#out');
    assert.ok(!text.startsWith('error'), text);
    const { toy, exact } = JSON.parse(text);
    assert.deepEqual(drawn(toy), drawn(want), "the CLI's samples in the browser");
    // The function answered in f32: P^L within f32's precision.
    assert.deepEqual(exact.map((e) => e.text), ['a', 'b']);
    assert.ok(Math.abs(exact[0].p - 2 / 3) < 1e-6 && Math.abs(exact[1].p - 1 / 3) < 1e-6, JSON.stringify(exact));
  } finally {
    await b.close();
    server.close();
    rmSync(site, { recursive: true, force: true });
  }
});

test('in Chromium: SmolLM2 on WebGPU (SwiftShader) gives the CPU path\'s tokens; auto keeps a software adapter off', async () => {
  const site = mkdtempSync(join(tmpdir(), 'strait-npm-gpu-'));
  execFileSync('cp', ['-r', NPM_DIR, join(site, 'strait-samplers')]);
  execFileSync('ln', ['-s', MODEL, join(site, 'model.gguf')]);
  writeFileSync(join(site, 'index.html'), `<!doctype html><meta charset="utf-8"><title>strait-samplers on WebGPU</title>
<pre id="out">loading</pre>
<script type="module">
  import { Model } from './strait-samplers/index.js';
  const out = document.getElementById('out');
  const request = { regex: 'yes|no|maybe', prompt: 'Is the sky blue? Answer yes, no or maybe.', chat: true,
    method: 'lcd', n: 1, seed: 1, maxTokens: 4 };
  try {
    const result = {};
    for (const backend of ['webgpu', 'cpu', 'auto']) {
      const m = await Model.load('./model.gguf', { backend });
      result[backend] = { engine: m.engine, samples: backend === 'auto' ? [] : await m.sample(request) };
      m.free();
    }
    out.textContent = JSON.stringify(result);
  } catch (e) {
    out.textContent = 'error: ' + e.message;
  }
</script>`);
  const server = await servePlain(site, 'gpu');
  const b = await launch({ webgpu: true });
  try {
    await b.page.goto(server.url);
    await b.page.waitForFunction(() => document.getElementById('out').textContent !== 'loading', null, { timeout: 240_000 });
    const text = await b.page.textContent('#out');
    assert.ok(!text.startsWith('error'), text);
    const r = JSON.parse(text);
    assert.match(r.webgpu.engine, /^WebGPU/);
    assert.equal(r.cpu.engine, 'CPU (wasm)');
    assert.equal(r.auto.engine, 'CPU (wasm)', `auto on a software adapter: ${r.auto.engine}`);
    assert.deepEqual(r.webgpu.samples.map((s) => s.tokens), r.cpu.samples.map((s) => s.tokens));
    assert.ok(Math.abs(r.webgpu.samples[0].logp - r.cpu.samples[0].logp) < 1e-2, JSON.stringify([r.webgpu.samples[0].logp, r.cpu.samples[0].logp]));
    console.log(`# figure: ${r.webgpu.engine}: ${r.webgpu.samples[0].text} (log P ${r.webgpu.samples[0].logp.toFixed(4)}); CPU (wasm): log P ${r.cpu.samples[0].logp.toFixed(4)}`);
  } finally {
    await b.close();
    server.close();
    rmSync(site, { recursive: true, force: true });
  }
});

test('the tarball of npm pack installs into an empty project without the network', () => {
  const project = mkdtempSync(join(tmpdir(), 'strait-npm-install-'));
  try {
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'empty', version: '1.0.0', type: 'module', private: true }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', TARBALL], { cwd: project, stdio: 'pipe' });
    writeFileSync(join(project, 'main.js'), `import { Model } from 'strait-samplers';
const r = await Model.toy('gsk').sample({ regex: '[01]{5}', n: 2, seed: 1, maxTokens: 8 });
console.log(JSON.stringify(r.map((s) => s.text)));`);
    const out = execFileSync('node', ['main.js'], { cwd: project, encoding: 'utf8' });
    const texts = JSON.parse(out);
    assert.equal(texts.length, 2);
    for (const t of texts) assert.match(t, /^[01]{5}$/);
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
});
