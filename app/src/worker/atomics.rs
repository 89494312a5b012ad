//! `Atomics` on the pool's control words, called without an exception handler.
//!
//! js-sys declares every `Atomics` function as one that may throw, and wasm-bindgen's glue
//! for such a function allocates (a closure and an `arguments` object) on every call. The
//! pool's workers read their control words millions of times a second while they watch for
//! a job or a chunk, so those allocations filled V8's young generation about every
//! millisecond: a trace of one 64-token run counted 942 minor collections in the two
//! workers (`docs/bench/page.md`), each pausing the worker and waking V8's helper threads
//! on cores the workers need. These functions cannot throw on the pool's `Int32Array` over
//! a `SharedArrayBuffer` at the fixed indices of its control block, so they are declared
//! here without `catch`. `Atomics.wait`, which throws where a thread may not block, keeps
//! js-sys's declaration.

use js_sys::Int32Array;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `Atomics.load(array, index)`.
    #[wasm_bindgen(js_namespace = Atomics, js_name = load)]
    pub fn load(array: &Int32Array, index: u32) -> i32;

    /// `Atomics.store(array, index, value)`.
    #[wasm_bindgen(js_namespace = Atomics, js_name = store)]
    pub fn store(array: &Int32Array, index: u32, value: i32) -> i32;

    /// `Atomics.add(array, index, value)`: the value before.
    #[wasm_bindgen(js_namespace = Atomics, js_name = add)]
    pub fn add(array: &Int32Array, index: u32, value: i32) -> i32;

    /// `Atomics.compareExchange(array, index, expected, replacement)`: the value before.
    #[wasm_bindgen(js_namespace = Atomics, js_name = compareExchange)]
    pub fn compare_exchange(array: &Int32Array, index: u32, expected: i32, replacement: i32)
    -> i32;

    /// `Atomics.notify(array, index)`: how many waiters it woke.
    #[wasm_bindgen(js_namespace = Atomics, js_name = notify)]
    pub fn notify(array: &Int32Array, index: u32) -> u32;
}
