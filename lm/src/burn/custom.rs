//! Our Q4_1 matrix-vector WGSL kernel (`shaders`' [`MatVec`]) as a burn custom kernel on
//! burn's wgpu backend: burn's quantized tensors have no per-block minimum, so Q4_1 cannot
//! be a burn quantized tensor, and decoding it to f32 would take 6.4× its memory.
//!
//! The kernel is launched through burn's cubecl runtime as a precompiled WGSL kernel: the
//! input is a burn tensor's buffer, the output a new buffer wrapped as a burn tensor, so
//! the rest of the program stays burn ops. cubecl binds every argument as a storage
//! buffer, in order, and suballocates tensors from shared buffers, so a read-only binding
//! beside a writable one may be two views of one buffer, which wgpu refuses in one
//! dispatch: every binding of the kernel (its two uniforms too) is declared
//! `read_write` here, as cubecl's own kernels declare theirs.

use burn_cubecl::cubecl::ir::{UIntKind, metadata::Info, settings::Dim3};
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::cubecl::server::{Handle, KernelArguments};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use burn_tensor::{DType, Device, Shape, Tensor};
use shaders::{MatVec, MatVecOutput, MatVecStrategy, WeightFormat};

/// Whether `device` is one of burn's cubecl devices (its wgpu backend here).
pub(crate) fn is_wgpu(device: &Device) -> bool {
    Tensor::<1>::zeros([1], device)
        .try_into_primitive::<CubeBackend>()
        .is_ok()
}

/// The runtime's client and device, read off a tensor made on `device`.
fn client_of(device: &Device) -> (Client, CubeDevice) {
    let t = Tensor::<1>::zeros([1], device)
        .try_into_primitive::<CubeBackend>()
        .expect("a wgpu device");
    (t.client, t.device)
}

/// Which of the two kernel forms runs: one invocation per row on a CPU adapter
/// (lavapipe, SwiftShader), a workgroup per row on a GPU, as our own engine chooses.
fn strategy(client: &Client) -> MatVecStrategy {
    let name = format!("{:?}", client.properties().hardware);
    if name.contains("Cpu") || std::env::var_os("STRAIT_BURN_ROWS").is_some() {
        MatVecStrategy::InvocationPerRow
    } else {
        MatVecStrategy::WorkgroupPerRow
    }
}

/// The Q4_1 product's WGSL, as a cubecl kernel that brings its own source.
#[derive(Debug, Clone)]
struct Q4_1Kernel {
    strategy: MatVecStrategy,
}

impl KernelMetadata for Q4_1Kernel {
    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info(self.strategy == MatVecStrategy::InvocationPerRow)
    }

    fn address_type(&self) -> ElemType {
        ElemType::UInt(UIntKind::U32)
    }
}

impl CubeKernel for Q4_1Kernel {
    fn define(&self) -> KernelDefinition {
        // Never compiled: `source` stands in for it.
        let settings =
            KernelSettings::new(Dim3::new_single(), ExecutionMode::Checked, AddressType::U32);
        KernelDefinition {
            body: Scope::root(settings.clone()),
            settings,
            info: Info::default(),
        }
    }

    fn source(&self) -> Option<PrecompiledSource> {
        let src = MatVec::wgsl(WeightFormat::Q4_1, self.strategy, MatVecOutput::One)
            .replace("var<uniform>", "var<storage, read_write>")
            .replace("var<storage, read>", "var<storage, read_write>");
        Some(PrecompiledSource {
            source: src,
            entrypoint_name: "main".to_string(),
            lang: "wgsl",
        })
    }
}

/// A `rows × cols` Q4_1 matrix in a buffer of burn's wgpu runtime.
pub(crate) struct Q4_1Matrix {
    client: Client,
    device: CubeDevice,
    blocks: Handle,
    /// `[rows, cols, mode 0 (write), 0]`, the kernel's `Dims`.
    dims: Handle,
    rows: usize,
    cols: usize,
    kernel: Q4_1Kernel,
}

impl Q4_1Matrix {
    /// Uploads the file's blocks of a matrix of `cols` columns.
    pub(crate) fn upload(device: &Device, blocks: &[u8], cols: usize) -> Self {
        let (client, device) = client_of(device);
        let rows = blocks.len() / (cols / 32 * 20);
        let dims = words(&[rows as u32, cols as u32, 0, 0]);
        Q4_1Matrix {
            blocks: client.create_from_slice(blocks),
            dims: client.create_from_slice(&dims),
            kernel: Q4_1Kernel {
                strategy: strategy(&client),
            },
            client,
            device,
            rows,
            cols,
        }
    }

    /// `x · Wᵀ` for `x` of shape `[n, cols]` on the same device: `[n, rows]`.
    pub(crate) fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        let [n, cols] = x.dims();
        assert_eq!(cols, self.cols, "Q4_1 product: input width");
        let x = into_contiguous(
            x.try_into_primitive::<CubeBackend>()
                .expect("a Q4_1 matrix multiplies tensors of its own wgpu device"),
        );
        let out = self.client.empty(n * self.rows * 4);
        // The kernel's `Step`: n tokens, none cached, all wanted.
        let step = self.client.create_from_slice(&words(&[n as u32, 0, 0, 0]));
        let [gx, gy, gz] = MatVec::workgroups(self.kernel.strategy, self.rows, n);
        self.client.launch(
            Box::new(self.kernel.clone()),
            CubeCount::Static(gx, gy, gz),
            KernelArguments::new()
                .with_buffer(self.blocks.clone().binding())
                .with_buffer(x.handle.clone().binding())
                .with_buffer(out.clone().binding())
                .with_buffer(self.dims.clone().binding())
                .with_buffer(step.binding()),
        );
        Tensor::from_primitive::<CubeBackend>(CubeTensor::new_contiguous(
            self.client.clone(),
            self.device.clone(),
            Shape::new([n, self.rows]),
            out,
            DType::F32,
        ))
    }
}

impl std::fmt::Debug for Q4_1Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Q4_1Matrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish_non_exhaustive()
    }
}

/// `u32`s as little-endian bytes.
fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}
