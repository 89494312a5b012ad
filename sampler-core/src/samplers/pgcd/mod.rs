//! P-GCD (seed 001) as a sampler: distil an HMM from the model, build its guide over the
//! constraint's tensorized automaton (on the run's HMM engine), and run SMC with the
//! guided proposal. The HMM's own math (forward pass, EM, the guide) is [`crate::hmm`].

mod distill;

pub use distill::{distill, sample_sequences};

use super::{Ctx, smc};
use crate::{Constraint, LanguageModel, SampleError};

/// Runs `p-gcd-smc` in `ctx`.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
) -> Result<(), SampleError> {
    let params = ctx.params();
    let tensor = ctx.tensorized().ok_or_else(|| {
        SampleError::Unsupported(
            "method p-gcd-smc needs the constraint's tensorized automaton (a regex); \
             this constraint has none"
                .into(),
        )
    })?;
    crate::hmm::check_table_size(
        params.max_tokens,
        tensor.num_states,
        params.hmm.hidden_states,
    )?;
    let hmm = distill(ctx, &params.hmm).await?;
    ctx.check_cancelled()?;
    let log_c = ctx
        .hmm_engine()
        .guide_table(&hmm, tensor, params.max_tokens)
        .await?;
    let guide = crate::hmm::Guide::with_table(
        hmm,
        tensor,
        params.max_tokens,
        params.hmm.guide_floor,
        log_c,
    )?;
    ctx.emit(crate::Event::Note {
        message: format!(
            "p-gcd: guide built ({} automaton states × {} hidden states × {} budgets, \
             {:.1} MB)",
            tensor.num_states,
            guide.hmm().hidden,
            params.max_tokens,
            guide.bytes() as f64 / 1e6
        ),
    });
    smc::run(ctx, smc::TokenProposal::PGcd(&guide)).await
}
