//! The animation clock: a callback on every animation frame, and the speed slider's scale.

use std::cell::RefCell;
use std::rc::Rc;

/// Calls `tick(timestamp_ms)` on every animation frame while it returns `true`.
pub fn every_frame(tick: impl FnMut(f64) -> bool + 'static) {
    type Tick = Rc<RefCell<Box<dyn FnMut(f64) -> bool>>>;
    fn schedule(tick: Tick) {
        leptos::prelude::request_animation_frame(move || {
            let now = crate::clock::now_ms();
            let again = (tick.borrow_mut())(now);
            if again {
                schedule(tick);
            }
        });
    }
    schedule(Rc::new(RefCell::new(Box::new(tick))));
}

/// The speed slider's positions (0..=SPEED_STEPS), log scale; the last is "everything at once".
pub const SPEED_STEPS: u32 = 10;

/// Events per second at a slider position (infinity at the last).
pub fn speed_at(pos: u32) -> f64 {
    if pos >= SPEED_STEPS {
        f64::INFINITY
    } else {
        2f64.powi(pos as i32) * 2.0
    }
}

/// The slider's label.
pub fn speed_label(pos: u32) -> String {
    let s = speed_at(pos);
    if s.is_finite() {
        format!("{s:.0} events/s")
    } else {
        "all at once".into()
    }
}
