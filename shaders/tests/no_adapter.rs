//! Without any Vulkan driver the context fails with a clear error, not a panic.

#[test]
fn no_driver_is_a_clear_error() {
    if cfg!(target_arch = "wasm32") {
        return;
    }
    // SAFETY: this test binary has one test and no other thread reads the environment.
    unsafe { std::env::set_var("VK_ICD_FILENAMES", "/nonexistent/icd.json") };
    unsafe { std::env::set_var("VK_DRIVER_FILES", "/nonexistent/icd.json") };
    let e = sampler_core::block_on(shaders::Gpu::new()).unwrap_err();
    assert!(matches!(e, shaders::GpuError::NoAdapter(_)), "{e:?}");
    assert!(e.to_string().contains("no GPU adapter"), "{e}");
}
