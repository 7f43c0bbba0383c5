//! The watchdog over Python hooks: a scheme's or service's method that never returns
//! (an endless loop in `enqueue` or `on_timer`) would hang a run for ever, since the
//! simulation waits for its answer. While a run slice is simulated, a thread looks at how
//! long the hook running now has run; past `engine.python_hook_timeout` (wall time) it
//! raises `HookTimeout` in the thread running the hook, which then fails as a hook that
//! raised does (its wrapper names the scheme or service and the method). A hook that
//! swallows that exception and goes on is ended with the process, one line on stderr,
//! after as long again.
//!
//! Schemes' and services' constructors (while the simulation is built) and services'
//! `results` (while the summary is made) are watched the same way.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

pyo3::create_exception!(
    _native,
    HookTimeout,
    pyo3::exceptions::PyException,
    "A Python hook ran past engine.python_hook_timeout."
);

/// When the hook running now started (ns since `EPOCH`, plus 1), 0 when none runs.
static SINCE_NS: AtomicU64 = AtomicU64::new(0);
/// The limit of the run being watched, for messages.
static LIMIT_NS: AtomicU64 = AtomicU64::new(0);
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// How often the watchdog looks.
const LOOK_EVERY: Duration = Duration::from_millis(100);

fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// Marks a hook as running until dropped. Taken inside `Python::attach`, so that the
/// watchdog, which looks while holding the interpreter lock, sees the hook running only
/// while its Python code is.
pub struct InHook(());

#[inline]
pub fn enter() -> InHook {
    SINCE_NS.store(now_ns(), Ordering::Relaxed);
    InHook(())
}

impl Drop for InHook {
    #[inline]
    fn drop(&mut self) {
        SINCE_NS.store(0, Ordering::Relaxed);
    }
}

/// The message of a hook the watchdog stopped, when `e` is its `HookTimeout`.
pub fn timeout_message(py: Python<'_>, e: &PyErr) -> Option<String> {
    e.is_instance_of::<HookTimeout>(py).then(|| {
        let secs = LIMIT_NS.load(Ordering::Relaxed) as f64 / 1e9;
        format!("did not return within {secs} s of wall time (engine.python_hook_timeout); allowed: hooks that return")
    })
}

/// Watches hooks run on the calling thread (which holds no interpreter lock while the
/// watchdog lives) until dropped.
pub struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// `thread_id` is the Python thread id of the thread that runs the hooks.
    pub fn start(thread_id: std::os::raw::c_ulong, limit: Duration) -> Watchdog {
        let limit_ns = limit.as_nanos() as u64;
        LIMIT_NS.store(limit_ns, Ordering::Relaxed);
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut interrupted = 0;
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(LOOK_EVERY) {
                let since = SINCE_NS.load(Ordering::Relaxed);
                if since == 0 || now_ns() - since <= limit_ns {
                    continue;
                }
                if since != interrupted {
                    interrupted = since;
                    Python::attach(|py| interrupt(py, thread_id, since));
                } else if now_ns() - since > 2 * limit_ns {
                    give_up(limit_ns);
                }
            }
        });
        Watchdog {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

/// Raises HookTimeout in the hook's thread, if the same hook still runs (checked under the
/// interpreter lock, which the hook's thread gives up only between bytecodes).
fn interrupt(py: Python<'_>, thread_id: std::os::raw::c_ulong, since: u64) {
    if SINCE_NS.load(Ordering::Relaxed) != since {
        return;
    }
    let ty = py.get_type::<HookTimeout>();
    // SAFETY: called with the interpreter lock held (`py`); the type object lives as long
    // as the module.
    unsafe {
        pyo3::ffi::PyThreadState_SetAsyncExc(thread_id as _, ty.as_ptr());
    }
}

/// A hook that swallowed the interrupt: end the process with one line.
fn give_up(limit_ns: u64) -> ! {
    eprintln!(
        "error: engine.python_hook_timeout: a Python scheme's or service's hook ran for {} s and went on after the watchdog's interrupt; allowed: hooks that return; no results were written",
        2 * limit_ns / 1_000_000_000
    );
    std::process::exit(1)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
