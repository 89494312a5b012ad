//! Our quantized matrix-vector WGSL kernels (`shaders`' [`MatVec`], one per GGUF block
//! format) as burn custom kernels on burn's wgpu backend: burn's quantized tensors are
//! symmetric with no per-block minimum (so Q4_1, Q5_1 and the K-quants' offsets do not
//! fit them), and decoding a matrix to f32 would take 2× (F16) to 12× (Q2_K) its memory.
//!
//! The kernel is launched through burn's cubecl runtime as a precompiled WGSL kernel: the
//! input is a burn tensor's buffer, the output a new buffer wrapped as a burn tensor, so
//! the rest of the program stays burn ops. cubecl binds every argument as a storage
//! buffer, in order, and suballocates tensors from shared buffers, so a read-only binding
//! beside a writable one may be two views of one buffer, which wgpu refuses in one
//! dispatch: every binding of the kernel (its two uniforms too) is declared
//! `read_write` here, as cubecl's own kernels declare theirs.

use crate::gguf::GgmlType;
use burn_cubecl::cubecl::ir::attributes::BufferIOAttr;
use burn_cubecl::cubecl::ir::{UIntKind, metadata::Info, settings::Dim3};
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::cubecl::server::{Handle, KernelArguments};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use burn_tensor::{DType, Device, DeviceKind, Shape, Tensor};
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

/// Which of the two kernel forms runs: one invocation per row on a CPU adapter burn lists
/// as one (lavapipe natively), a workgroup per row otherwise, as our own engine chooses.
/// (In a browser burn's device does not say its adapter's kind: SwiftShader gets the GPU
/// form there, slower on it but the same products.)
fn strategy(device: &Device) -> MatVecStrategy {
    if *device == Device::wgpu(DeviceKind::Cpu) {
        MatVecStrategy::InvocationPerRow
    } else {
        MatVecStrategy::WorkgroupPerRow
    }
}

/// A format's product in WGSL, as a cubecl kernel that brings its own source.
#[derive(Debug, Clone)]
struct MatVecKernel {
    format: WeightFormat,
    strategy: MatVecStrategy,
}

impl KernelMetadata for MatVecKernel {
    fn id(&self) -> KernelId {
        KernelId::new::<Self>().info((self.format, self.strategy))
    }

    fn address_type(&self) -> ElemType {
        ElemType::UInt(UIntKind::U32)
    }
}

impl CubeKernel for MatVecKernel {
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
        let src = MatVec::wgsl(self.format, self.strategy, MatVecOutput::One)
            .replace("var<uniform>", "var<storage, read_write>")
            .replace("var<storage, read>", "var<storage, read_write>");
        Some(PrecompiledSource {
            source: src,
            entrypoint_name: "main".to_string(),
            lang: "wgsl",
        })
    }
}

/// A `rows × cols` matrix of quantized blocks in a buffer of burn's wgpu runtime.
pub(crate) struct QuantMatrix {
    client: Client,
    device: CubeDevice,
    blocks: Handle,
    /// `[rows, cols, mode 0 (write), 0]`, the kernel's `Dims`.
    dims: Handle,
    rows: usize,
    cols: usize,
    kernel: MatVecKernel,
}

impl QuantMatrix {
    /// Uploads the blocks (`ty`, read by `format`'s decoder) of a matrix of `cols` columns.
    pub(crate) fn upload(
        device: &Device,
        format: WeightFormat,
        ty: GgmlType,
        blocks: &[u8],
        cols: usize,
    ) -> Self {
        Self::upload_with(device, format, ty, blocks, cols, strategy(device))
    }

    /// [`QuantMatrix::upload`] with a given kernel form (the tests run both).
    pub(crate) fn upload_with(
        device: &Device,
        format: WeightFormat,
        ty: GgmlType,
        blocks: &[u8],
        cols: usize,
        strategy: MatVecStrategy,
    ) -> Self {
        let (client, device) = client_of(device);
        let rows = blocks.len() / (cols / ty.block_len() * ty.block_bytes());
        let dims = words(&[rows as u32, cols as u32, 0, 0]);
        // Storage is read as u32 words: a whole number of them.
        let mut padded = blocks.to_vec();
        padded.resize(blocks.len().div_ceil(4) * 4, 0);
        QuantMatrix {
            blocks: client.create_from_slice(&padded),
            dims: client.create_from_slice(&dims),
            kernel: MatVecKernel { format, strategy },
            client,
            device,
            rows,
            cols,
        }
    }

    /// `x · Wᵀ` for `x` of shape `[n, cols]` on the same device: `[n, rows]`.
    pub(crate) fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        let [n, cols] = x.dims();
        assert_eq!(cols, self.cols, "quantized product: input width");
        let x = into_contiguous(
            x.try_into_primitive::<CubeBackend>()
                .expect("a quantized matrix multiplies tensors of its own wgpu device"),
        );
        let out = self.client.empty(n * self.rows * 4);
        // The kernel's `Step`: n tokens, none cached, all wanted.
        let step = shaders::Step {
            n: n as u32,
            ..shaders::Step::default()
        };
        let step = self.client.create_from_slice(&words(&step.uniform_words()));
        let [gx, gy, gz] = MatVec::workgroups(self.kernel.strategy, self.rows, n);
        // What each binding is, so that a failed launch marks only its output bad (not
        // the weights, which every later product reads).
        let (read, write) = (BufferIOAttr::ReadOnly, BufferIOAttr::WriteOnly);
        self.client.launch(
            Box::new(self.kernel.clone()),
            CubeCount::Static(gx, gy, gz),
            KernelArguments::new()
                .with_buffer_io(self.blocks.clone().binding(), read)
                .with_buffer_io(x.handle.clone().binding(), read)
                .with_buffer_io(out.clone().binding(), write)
                .with_buffer_io(self.dims.clone().binding(), read)
                .with_buffer_io(step.binding(), read),
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

impl std::fmt::Debug for QuantMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantMatrix")
            .field("format", &self.kernel.format)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish_non_exhaustive()
    }
}

/// `u32`s as little-endian bytes.
fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}
