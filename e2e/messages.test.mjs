// The page explains what is wrong instead of failing silently: no WebGPU, no model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_URL, withPage, waitForPhase } from './lib.mjs';

test('without navigator.gpu the page says WebGPU is missing', async () => {
  await withPage('no-navigator-gpu', { webgpu: true }, async (page) => {
    // A browser without the API at all (older browsers, Firefox on Linux).
    await page.addInitScript(() => {
      delete Navigator.prototype.gpu;
      delete navigator.gpu;
    });
    await page.goto(BASE_URL);
    await waitForPhase(page, ['no-webgpu'], 60_000);
    const msg = await page.locator('#webgpu-missing').textContent();
    assert.match(msg, /WebGPU is not available in this browser \(navigator\.gpu is missing\)/);
    assert.equal(await page.locator('#generate').isDisabled(), true);
  });
});

test('Chromium started without the WebGPU flags gets the no-WebGPU message', async () => {
  await withPage('webgpu-disabled', { webgpu: false, extraArgs: ['--disable-features=WebGPU,Vulkan'] }, async (page) => {
    await page.goto(BASE_URL);
    await waitForPhase(page, ['no-webgpu'], 60_000);
    const msg = await page.locator('#webgpu-missing').textContent();
    assert.match(msg, /WebGPU/);
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
