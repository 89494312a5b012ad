//! Per-kernel timing ([`Gpu::start_profiling`]): each dispatch counted under its kernel's
//! label with a GPU time, or, on an adapter without timestamp queries inside passes (every
//! browser's WebGPU), a refusal that says so.

use crate::common;

use common::{gpu_tests, say};
use shaders::*;

gpu_tests! {
    async fn profiling_times_each_kernel_or_says_why_not() {
        let gpu = common::gpu().await;
        let started = gpu.start_profiling();
        if !gpu.can_profile() {
            let e = started.unwrap_err().to_string();
            assert!(e.contains("timestamp queries"), "{e}");
            say!("profiling: not offered by {} ({e}); only the refusal is tested here", gpu.adapter_name());
            return;
        }
        started.unwrap();
        let (rows, cols, n) = (64, 256, 2);
        let k = MatVec::new(&gpu, WeightFormat::F32).await.unwrap();
        let w = gpu.zeroed("w", rows * cols).unwrap();
        let x = gpu.zeroed("x", n * cols).unwrap();
        let out = gpu.zeroed("out", n * rows).unwrap();
        let dims = MatVec::dims(&gpu, rows, cols, MatVecMode::Write).unwrap();
        let step = Step { n: n as u32, ..Step::default() }.buffer(&gpu);
        let bind = k.bind(&gpu, &w, &x, &out, &dims, &step);
        let rope = Rope::new(&gpu).await.unwrap();
        let table = gpu.storage("table", &f32_bytes(&rope_table(4, &[1.0, 0.5]))).unwrap();
        let rope_dims = Rope::dims(&gpu, 8, 4, 4, false, false);
        let rope_bind = rope.bind(&gpu, &x, &table, &rope_dims, &step);
        for _ in 0..3 {
            gpu.run(|p| {
                k.dispatch(p, &bind, rows, n);
                k.dispatch(p, &bind, rows, n);
                rope.dispatch(p, &rope_bind, 8, 4, 4, n);
            })
            .unwrap();
        }
        let (times, untimed) = gpu.stop_profiling().await.unwrap();
        assert_eq!(untimed, 0);
        let get = |name: &str| {
            times
                .iter()
                .find(|t| t.kernel.contains(name))
                .unwrap_or_else(|| panic!("{name} in {times:?}"))
        };
        assert_eq!(get("matvec F32").dispatches, 6);
        assert_eq!(get("rope").dispatches, 3);
        assert_eq!(times.len(), 2, "{times:?}");
        assert!(times.iter().all(|t| t.seconds >= 0.0 && t.seconds < 10.0), "{times:?}");
        for t in &times {
            say!("profile on {}: {} x{} {:.1} us", gpu.adapter_name(), t.kernel, t.dispatches, t.seconds * 1e6);
        }
        // Stopped: nothing is timed any more, and stopping again is refused.
        gpu.run(|p| k.dispatch(p, &bind, rows, n)).unwrap();
        assert!(gpu.stop_profiling().await.is_err());
    }
}
