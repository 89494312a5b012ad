// The page explains what is wrong instead of failing silently, and runs where it can:
// without WebGPU on the CPU (one line says so), a missing model with a clear message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import {
  ARTIFACTS, BASE_URL, DIST, finishQuickRun, servePlain, startQuickRun, waitForPhase, withPage,
} from './lib.mjs';

const MODEL_FILE = join(dirname(ARTIFACTS), '..', 'assets', 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
/** The line `strait` prints for the same file (cli/tests/cli.rs checks it there). */
const GEMMA_LINE = 'model: architecture "gemma" is not supported (supported: llama, qwen2, qwen3)';

const LOAD_MS = 300_000;
const RUN_MS = 240_000;

/** Removes `navigator.gpu` before the page's scripts run (older browsers, Firefox on Linux). */
async function withoutNavigatorGpu(page) {
  await page.addInitScript(() => {
    delete Navigator.prototype.gpu;
    delete navigator.gpu;
  });
}

/** One lcd run of the quick form under (yes|no|maybe); what the page shows at the end. */
async function quickRun(page) {
  await startQuickRun(page, {
    prompt: 'Is the sky blue on a clear day? Answer yes, no or maybe.', regex: '(yes|no|maybe)', method: 'lcd', maxTokens: 4,
  });
  return finishQuickRun(page, RUN_MS);
}

test('without navigator.gpu the page says so in one line and runs the model on the CPU', async () => {
  await withPage('no-navigator-gpu', { webgpu: true }, async (page) => {
    await withoutNavigatorGpu(page);
    await page.goto(BASE_URL);
    await waitForPhase(page, ['ready'], LOAD_MS);
    const line = await page.locator('#webgpu-ok').textContent();
    assert.match(line, /navigator\.gpu is missing/);
    assert.match(line, /the model runs on the CPU \(wasm\)/);
    assert.equal(await page.getAttribute('#backend-info', 'data-backend'), 'cpu');
    const r = await quickRun(page);
    assert.equal(r.state, 'done', r.message);
    assert.match(r.text, /^(yes|no|maybe)$/);
  });
});

test('?backend=webgpu without WebGPU stops with the message', async () => {
  await withPage('webgpu-asked-missing', { webgpu: true }, async (page) => {
    await withoutNavigatorGpu(page);
    await page.goto(new URL('?backend=webgpu', BASE_URL).href);
    await waitForPhase(page, ['no-webgpu'], 60_000);
    const msg = await page.locator('#webgpu-missing').textContent();
    assert.match(msg, /\?backend=webgpu asks for WebGPU, but this browser has no WebGPU \(navigator\.gpu is missing\)/);
    assert.equal(await page.locator('#generate').isDisabled(), true);
  });
});

test('Chromium started without the WebGPU flags runs the quick form on the CPU', async () => {
  await withPage('webgpu-disabled', { webgpu: false, extraArgs: ['--disable-features=WebGPU,Vulkan'] }, async (page) => {
    await page.goto(BASE_URL);
    await waitForPhase(page, ['ready'], LOAD_MS);
    const line = await page.locator('#webgpu-ok').textContent();
    assert.match(line, /none here \(.+\); the model runs on the CPU \(wasm\)/);
    assert.equal(await page.getAttribute('#backend-info', 'data-backend'), 'cpu');
    const r = await quickRun(page);
    assert.equal(r.state, 'done', r.message);
    assert.match(r.text, /^(yes|no|maybe)$/);
  });
});

test('a model that cannot be fetched gives a clear message', async () => {
  await withPage('model-missing', { webgpu: true }, async (page) => {
    await page.goto(new URL('?model=models/no-such-model.gguf', BASE_URL).href);
    await page.waitForFunction(() => document.querySelector('main')?.dataset.phase === 'failed', null, {
      timeout: 60_000,
    });
    const msg = await page.locator('#model-error').textContent();
    assert.match(msg, /could not be fetched from .*no-such-model\.gguf/);
    assert.match(msg, /HTTP 404/);
  });
});

/** Opens the page with `?model=URL`; the one-line message once loading has failed. */
async function modelError(page, url) {
  await page.goto('about:blank');
  await page.goto(new URL(`?model=${encodeURIComponent(url)}`, BASE_URL).href);
  // A model on another origin is asked for first: say yes.
  await page.waitForFunction(() => ['failed', 'asking'].includes(document.querySelector('main')?.dataset.phase),
    null, { timeout: 60_000 });
  if (await page.locator('#model-ask-yes').count()) await page.click('#model-ask-yes');
  await page.waitForFunction(() => document.querySelector('main')?.dataset.phase === 'failed', null, {
    timeout: 60_000,
  });
  const msg = await page.locator('#model-error').textContent();
  assert.ok(!msg.includes('\n'), `one line: ${msg}`);
  return msg;
}

test('a ?model= that is not a GGUF, or on another origin that does not allow CORS, says so in one line', async () => {
  // Python's http.server on another port: another origin, and no CORS header.
  const other = await servePlain(DIST, 'elsewhere');
  try {
    await withPage('model-refused', { webgpu: true }, async (page) => {
      assert.match(await modelError(page, 'index.html'), /not a GGUF file: the first bytes are/);
      const msg = await modelError(page, `${other.url}models/SmolLM2-135M-Instruct.Q4_1.gguf`);
      assert.match(msg, /could not be fetched from http:\/\/127\.0\.0\.1:\d+\/elsewhere\//);
      assert.match(msg, /another origin \(http:\/\/127\.0\.0\.1:\d+\)/);
      assert.match(msg, /Access-Control-Allow-Origin/);
    });
  } finally {
    other.close();
  }
});

test('a file from disk: too large for the device is asked about first, an unsupported architecture gets strait\'s line', async () => {
  await withPage('model-from-disk-refused', { webgpu: true }, async (page) => {
    await withoutNavigatorGpu(page);
    await page.goto(BASE_URL);
    await waitForPhase(page, ['ready'], LOAD_MS);
    const before = await page.locator('#model-info').textContent();

    // A device that reports 0.25 GiB: the page asks before reading the 98 MB file; "no"
    // leaves the loaded model in place and says why in a note.
    await page.evaluate(() => Object.defineProperty(navigator, 'deviceMemory', { get: () => 0.25, configurable: true }));
    let asked = null;
    page.once('dialog', (d) => { asked = d.message(); d.dismiss(); });
    await page.setInputFiles('#model-file', MODEL_FILE);
    await page.waitForFunction(() => [...document.querySelectorAll('#status .note')].some((n) => n.textContent.includes('was not loaded')),
      null, { timeout: 30_000 });
    assert.match(asked ?? '', /0\.1 GB; the page's sampling workers hold about twice that between them/);
    assert.match(asked, /Load it anyway\?/);
    assert.equal(await page.locator('main').getAttribute('data-phase'), 'ready');
    assert.equal(await page.locator('#model-info').textContent(), before);

    // SmolLM2 with its architecture renamed "gemma": refused in one line, the same as strait's.
    await page.evaluate(() => Object.defineProperty(navigator, 'deviceMemory', { get: () => 8, configurable: true }));
    const bytes = readFileSync(MODEL_FILE);
    const at = bytes.indexOf('llama');
    bytes.write('gemma', at);
    mkdirSync(ARTIFACTS, { recursive: true });
    const gemma = join(ARTIFACTS, 'gemma.gguf');
    writeFileSync(gemma, bytes);
    try {
      await page.setInputFiles('#model-file', gemma);
      await waitForPhase(page, ['failed'], LOAD_MS);
    } finally {
      rmSync(gemma, { force: true });
    }
    const msg = await page.locator('#model-error').textContent();
    assert.equal(msg, `The model could not be loaded: ${GEMMA_LINE}`);
  });
});

test('qwen3, qwen2 and Llama 3 files from disk load and sample in the page', async () => {
  // The tiny random files lm's tests compare with llama.cpp (lm/reference/make_arch_models.py).
  const dir = join(dirname(ARTIFACTS), '..', 'target', 'arch-models');
  const names = ['tiny-qwen3.gguf', 'tiny-qwen2.gguf', 'tiny-llama3.gguf'];
  if (!names.every((n) => existsSync(join(dir, n)))) {
    execFileSync('python3', [join(dirname(ARTIFACTS), '..', 'lm', 'reference', 'make_arch_models.py'), dir, MODEL_FILE]);
  }
  await withPage('arch-models-from-disk', { webgpu: true }, async (page) => {
    await withoutNavigatorGpu(page);
    await page.goto(BASE_URL);
    await waitForPhase(page, ['ready'], LOAD_MS);
    for (const [name, arch] of [['tiny-qwen3.gguf', 'qwen3'], ['tiny-qwen2.gguf', 'qwen2'], ['tiny-llama3.gguf', 'llama']]) {
      await page.setInputFiles('#model-file', join(dir, name));
      await page.waitForFunction((n) => document.querySelector('#model-info')?.textContent.includes(n), name, { timeout: 60_000 });
      await waitForPhase(page, ['ready'], LOAD_MS);
      const info = await page.locator('#model-info').textContent();
      assert.match(info, new RegExp(`${arch} · \\d+\\.\\d MB · F32 ×\\d+`), info);
      assert.match(info, /context 256/);
      // These files carry no chat template: the box is cleared and disabled.
      assert.equal(await page.locator('#chat').isDisabled(), true);
      assert.equal(await page.locator('#chat').isChecked(), false);
      const r = await quickRun(page);
      assert.equal(r.state, 'done', `${name}: ${r.message}`);
      assert.match(r.text, /^(yes|no|maybe)$/, name);
    }
  });
});
