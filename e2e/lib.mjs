// Shared helpers of the end-to-end tests: launch Debian's Chromium headless through
// playwright-core with the WebGPU-on-SwiftShader flags (Chromium runs WebGPU on its
// software Vulkan when told to), each launch with a fresh profile; screenshots on failure
// into e2e/artifacts/; a plain static server for the published site.
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BASE_URL = process.env.STRAIT_URL ?? 'http://127.0.0.1:8080/';
export const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), 'artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const COMMON = [
  '--no-sandbox',
  '--disable-gpu-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const WEBGPU = ['--enable-unsafe-webgpu', '--enable-features=Vulkan'];

/**
 * A headless Chromium with a fresh profile; `close()` also removes the profile.
 * `openDetails: false` shows the page's folded details folded, as a first visit does.
 * playwright-core passes `--headless=new`-equivalent `--headless` itself.
 */
export async function launch({ webgpu = true, extraArgs = [], openDetails = true, viewport = { width: 1200, height: 900 } } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'strait-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...COMMON, ...(webgpu ? WEBGPU : []), ...extraArgs],
    viewport,
    acceptDownloads: true,
  });
  // The page folds its engineering details (the backend select, the model file input,
  // the quick form) until they are opened once; the engine tests work in them, so they
  // start as someone who opened them. The lesson tests see the page as a newcomer does.
  if (openDetails) {
    await context.addInitScript(() => {
      try {
        for (const id of ['engine', 'quick', 'workers']) localStorage.setItem(`strait.open.${id}`, '1');
      } catch {}
    });
  }
  const page = context.pages()[0] ?? (await context.newPage());
  const logs = [];
  page.on('console', (m) => logs.push(`[${m.type()}] ${m.text()}`));
  // Uncaught page errors also end waits early (see waitForPhase).
  page.straitErrors = [];
  page.on('pageerror', (e) => {
    logs.push(`[pageerror] ${e.message}`);
    page.straitErrors.push(e.message);
  });
  return {
    context,
    page,
    logs,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Runs `body(page)`; on failure saves `<name>-failure.png` and prints the page's console. */
export async function withPage(name, options, body) {
  const b = await launch(options);
  try {
    return await body(b.page, b);
  } catch (e) {
    await b.page.screenshot({ path: join(ARTIFACTS, `${name}-failure.png`), fullPage: true }).catch(() => {});
    console.error(`--- console of ${name} ---\n${b.logs.join('\n')}`);
    throw e;
  } finally {
    await b.close();
  }
}

/** The page's phase (`main[data-phase]`). */
export async function phase(page) {
  return page.getAttribute('main', 'data-phase');
}

/** Rejects as soon as the page throws an uncaught error (a crashed wasm never settles). */
function pageCrash(page) {
  let timer;
  const crashed = new Promise((_, reject) => {
    timer = setInterval(() => {
      if (page.straitErrors?.length) reject(new Error(`the page threw: ${page.straitErrors[0]}`));
    }, 250);
  });
  return { crashed, stop: () => clearInterval(timer) };
}

/** `promise`, or a rejection as soon as the page throws an uncaught error. */
/** Waits out the prefill the playground starts once a real-model prompt has settled in its
 * form (600 ms) while the pool is idle, so that the worker counters read next count the
 * run alone. */
export async function prefillDone(page) {
  await page.waitForTimeout(800);
  await unlessCrash(page, page.waitForFunction(() => document.querySelector('#pg-worker').dataset.busy === '0',
    null, { timeout: 60_000, polling: 100 }));
}

export async function unlessCrash(page, promise) {
  const crash = pageCrash(page);
  try {
    return await Promise.race([crash.crashed, promise]);
  } finally {
    crash.stop();
  }
}

/** Waits until `main[data-phase]` is one of `phases`; fails fast on `failed`/`no-webgpu`
 *  and on an uncaught page error. */
export async function waitForPhase(page, phases, timeout) {
  const crash = pageCrash(page);
  try {
    await Promise.race([
      crash.crashed,
      page.waitForFunction(
        (want) => {
          const p = document.querySelector('main')?.dataset.phase;
          return want.includes(p) || p === 'failed' || p === 'no-webgpu';
        },
        phases,
        { timeout, polling: 250 },
      ),
    ]);
  } finally {
    crash.stop();
  }
  const p = await phase(page);
  if (!phases.includes(p)) {
    const msg = await page.locator('#model-error, #webgpu-missing').first().textContent().catch(() => '');
    throw new Error(`page reached phase ${p} instead of ${phases}: ${msg}`);
  }
  return p;
}

/**
 * Fills the quick form (`#prompt`, `#regex`, ...) and starts a run, by the Generate button
 * or, with `keys`, by Ctrl+Enter in the prompt (the shortcut, as a user would); resolves
 * once the page has counted the new run. `chat` unset leaves the chat template's box as
 * it is (a file without a template disables it).
 */
export async function startQuickRun(page, { prompt, regex, method, maxTokens, seed = 1, chat, keys = false }) {
  await page.fill('#prompt', prompt);
  await page.fill('#regex', regex);
  await page.fill('#max-tokens', String(maxTokens));
  await page.fill('#seed', String(seed));
  if (chat !== undefined) await page.setChecked('#chat', chat);
  await page.check(`#method-${method}`);
  const runs = Number(await page.getAttribute('#run-status', 'data-run'));
  if (keys) await page.locator('#prompt').press('Control+Enter');
  else await page.click('#generate');
  await page.waitForFunction((n) => Number(document.querySelector('#run-status')?.dataset.run) > n, runs, {
    timeout: 10_000,
  });
}

/**
 * Waits (at most `timeout` ms) for the quick form's run to end; returns what the page
 * shows: its state and message, the text and whether it is valid, the stats line, each
 * token (text, probability, z where shown, end of sequence) and the wait in ms.
 */
export async function finishQuickRun(page, timeout) {
  const t0 = Date.now();
  await unlessCrash(
    page,
    page.waitForFunction(
      () => ['done', 'stopped', 'error'].includes(document.querySelector('#run-status')?.dataset.state),
      null,
      { timeout, polling: 200 },
    ),
  );
  const r = await page.evaluate(() => ({
    state: document.querySelector('#run-status').dataset.state,
    message: document.querySelector('#run-status').textContent,
    text: document.querySelector('#result-text')?.textContent ?? null,
    valid: document.querySelector('#result-text')?.dataset.valid ?? null,
    stats: document.querySelector('#stats').textContent,
    tokens: [...document.querySelectorAll('#output .tok')].map((t) => ({
      p: Number(t.dataset.p),
      z: t.dataset.z === undefined ? null : Number(t.dataset.z),
      eos: t.classList.contains('eos'),
      text: t.querySelector('.tok-text').textContent,
    })),
  }));
  r.wallMs = Date.now() - t0;
  return r;
}

/** Whether all of `s` matches `re`, by JavaScript's own RegExp (outside the code under test). */
export const fullMatch = (re, s) => new RegExp(`^(?:${re})$`).test(s);

/** Starts counting animation frames in the page (`stopFrameCount` reads the rate). */
export async function startFrameCount(page) {
  await page.evaluate(() => {
    window.__frames = { n: 0, t0: performance.now(), on: true };
    const tick = () => {
      if (!window.__frames.on) return;
      window.__frames.n++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}

/** Stops the count: frames per second (one decimal) and seconds since the start. */
export async function stopFrameCount(page) {
  return page.evaluate(() => {
    const f = window.__frames;
    f.on = false;
    const secs = (performance.now() - f.t0) / 1000;
    return { fps: Math.round((f.n / secs) * 10) / 10, secs: Math.round(secs * 10) / 10 };
  });
}

/**
 * One browser shared by the tests of a file: launched before them, closed after them. A
 * test that fails sets `failed` (or runs in `step`, which does): then `<name>-failure.png`
 * is saved and the page's console printed. What the tests put in `figures` is printed
 * after them as one `# figure: <label>: {...}` line. `setup(b)` runs once after the
 * launch (an init script, say).
 */
export function sharedBrowser(name, label, { setup } = {}) {
  const shared = {
    b: null,
    failed: false,
    figures: {},
    /** Runs `body(page)`, marking the file failed if it throws. */
    async step(body) {
      try {
        return await body(shared.b.page);
      } catch (e) {
        shared.failed = true;
        throw e;
      }
    },
  };
  before(async () => {
    shared.b = await launch({ webgpu: true });
    if (setup) await setup(shared.b);
  });
  after(async () => {
    const { b } = shared;
    if (!b) return;
    if (shared.failed) {
      await b.page.screenshot({ path: join(ARTIFACTS, `${name}-failure.png`), fullPage: true }).catch(() => {});
      console.error(`--- page console ---\n${b.logs.join('\n')}`);
    }
    await b.close();
    if (Object.keys(shared.figures).length) {
      console.log(`# figure: ${label}: ${JSON.stringify(shared.figures)}`);
    }
  });
  return shared;
}

/** The built site (`cargo xtask dist` or `build`): `STRAIT_DIST`, else `../dist`. */
export const DIST = process.env.STRAIT_DIST ?? join(dirname(ARTIFACTS), '..', 'dist');

/**
 * Serves `dir` the way a plain static host would: Python's `http.server`, with none of the
 * headers our own server sends, under the sub-path `/<sub>/` (as a GitHub Pages project
 * site is). Resolves to `{ url, close() }`.
 */
export async function servePlain(dir, sub = 'strait') {
  const root = mkdtempSync(join(tmpdir(), 'strait-site-'));
  symlinkSync(dir, join(root, sub));
  const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', root],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`http.server did not start: ${out}`)), 15_000);
    server.on('exit', (code) => reject(new Error(`http.server exited (${code}): ${out}`)));
    server.stdout.on('data', (d) => {
      out += d;
      const m = /port (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    server.stderr.on('data', () => {}); // one access-log line per request
  });
  return {
    url: `http://127.0.0.1:${port}/${sub}/`,
    close() {
      server.kill();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
