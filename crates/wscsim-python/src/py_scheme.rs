//! Python schemes: a class with `classify`, `enqueue` and `schedule` (and optionally
//! `route`), one instance per switch, called for every packet through the
//! `CustomScheme` trait. For prototyping: each call crosses into the interpreter (see
//! docs/schemes.md for the cost). A method that raises stops nothing at once; the first
//! error is kept and reported when the run slice returns.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use wscsim::packet::{ecn, Packet, PktId};
use wscsim::scheme::spec::PortSite;
use wscsim::scheme::{CustomScheme, PortCtx, Verdict};

/// The packet as a Python scheme sees it. `dscp`, `priority` and `fields` (two integers
/// that travel with the packet) may be changed; the rest is read-only.
#[pyclass(name = "Packet", module = "wscsim")]
pub struct PyPacket {
    #[pyo3(get)]
    src: u32,
    #[pyo3(get)]
    dst: u32,
    #[pyo3(get)]
    flow: u32,
    /// Frame bytes (Ethernet header to FCS).
    #[pyo3(get)]
    size: u32,
    #[pyo3(get)]
    payload: u32,
    #[pyo3(get)]
    seq: u64,
    #[pyo3(get)]
    in_port: u32,
    #[pyo3(get)]
    ecn_capable: bool,
    #[pyo3(get, set)]
    dscp: u8,
    #[pyo3(get, set)]
    priority: u64,
    #[pyo3(get, set)]
    fields: [u32; 2],
}

impl PyPacket {
    fn of(p: &Packet) -> Self {
        PyPacket {
            src: p.src_host,
            dst: p.dst_host,
            flow: p.flow_id,
            size: p.frame_bytes,
            payload: p.payload_bytes,
            seq: p.seq,
            in_port: u32::from(p.in_port),
            ecn_capable: p.ecn != ecn::NOT_ECT,
            dscp: p.dscp,
            priority: p.priority,
            fields: p.scheme_fields,
        }
    }
    fn write_back(&self, p: &mut Packet) {
        p.dscp = self.dscp.min(63);
        p.priority = self.priority;
        p.scheme_fields = self.fields;
    }
}

/// The port as a Python scheme sees it: a snapshot taken for the call.
#[pyclass(name = "Port", module = "wscsim")]
pub struct PyPort {
    /// The port's index among its switch's ports.
    #[pyo3(get)]
    index: u32,
    #[pyo3(get)]
    now_ps: u64,
    #[pyo3(get)]
    rate_bps: u64,
    #[pyo3(get)]
    bytes_queued: u64,
    #[pyo3(get)]
    packets_queued: u32,
    /// Most bytes the port may hold now.
    #[pyo3(get)]
    limit_bytes: u64,
    /// Packets and bytes in each queue.
    #[pyo3(get)]
    queue_packets: Vec<u32>,
    #[pyo3(get)]
    queue_bytes: Vec<u64>,
}

impl PyPort {
    fn of(index: u32, ctx: &PortCtx) -> Self {
        PyPort {
            index,
            now_ps: ctx.now_ps,
            rate_bps: ctx.rate_bps,
            bytes_queued: *ctx.bytes_queued,
            packets_queued: *ctx.pkts_queued,
            limit_bytes: ctx.limit_bytes,
            queue_packets: ctx.queues.iter().map(|q| q.len).collect(),
            queue_bytes: ctx.queues.iter().map(|q| q.bytes).collect(),
        }
    }
}

/// First error raised by a Python scheme, shared by every port's wrapper.
pub type ErrorSlot = Arc<Mutex<Option<String>>>;

pub struct PyScheme {
    obj: Py<PyAny>,
    class: String,
    port: u32,
    routes: bool,
    error: ErrorSlot,
}

impl PyScheme {
    fn fail(&self, py: Python<'_>, method: &str, e: PyErr) {
        let mut slot = self.error.lock().unwrap();
        if slot.is_none() {
            let tb = e
                .traceback(py)
                .and_then(|t| t.format().ok())
                .unwrap_or_default();
            *slot = Some(match crate::watchdog::timeout_message(py, &e) {
                Some(m) => format!("{}.{method} {m}", self.class),
                None => format!(
                    "{}.{method} raised {}\n{tb}",
                    self.class,
                    e.value(py)
                        .repr()
                        .map(|r| r.to_string())
                        .unwrap_or_default()
                ),
            });
        }
    }
    fn failed(&self) -> bool {
        self.error.lock().unwrap().is_some()
    }
}

impl CustomScheme for PyScheme {
    fn routes(&self) -> bool {
        self.routes
    }

    fn route(&mut self, pkt: &Packet, candidates: &[u32]) -> Option<u32> {
        if self.failed() {
            return None;
        }
        Python::attach(|py| {
            let _hook = crate::watchdog::enter();
            let r = self
                .obj
                .call_method1(py, "route", (PyPacket::of(pkt), candidates.to_vec()))
                .and_then(|v| v.extract::<Option<u32>>(py));
            r.map_err(|e| self.fail(py, "route", e)).ok().flatten()
        })
    }

    fn classify(&mut self, ctx: &mut PortCtx, pkt: PktId, _in_port: u32) -> usize {
        if self.failed() {
            return 0;
        }
        Python::attach(|py| {
            let _hook = crate::watchdog::enter();
            let view = match Py::new(py, PyPacket::of(ctx.packet(pkt))) {
                Ok(v) => v,
                Err(e) => {
                    self.fail(py, "classify", e);
                    return 0;
                }
            };
            let r = self
                .obj
                .call_method1(
                    py,
                    "classify",
                    (view.clone_ref(py), PyPort::of(self.port, ctx)),
                )
                .and_then(|q| q.extract::<usize>(py));
            // A classifier may set the packet's dscp, priority or fields (as enqueue may).
            view.borrow(py).write_back(ctx.pool.get_mut(pkt));
            match r {
                Ok(q) if q < ctx.queues.len() => q,
                Ok(q) => {
                    self.fail(
                        py,
                        "classify",
                        pyo3::exceptions::PyValueError::new_err(format!(
                            "returned queue {q}; allowed: 0 to {}",
                            ctx.queues.len() - 1
                        )),
                    );
                    0
                }
                Err(e) => {
                    self.fail(py, "classify", e);
                    0
                }
            }
        })
    }

    fn enqueue(&mut self, ctx: &mut PortCtx, pkt: PktId, queue: usize) -> Verdict {
        if self.failed() {
            return Verdict::Dropped;
        }
        let answer = Python::attach(|py| {
            let _hook = crate::watchdog::enter();
            let view = Py::new(py, PyPacket::of(ctx.packet(pkt)))
                .map_err(|e| self.fail(py, "enqueue", e))
                .ok()?;
            let r = self
                .obj
                .call_method1(
                    py,
                    "enqueue",
                    (view.clone_ref(py), PyPort::of(self.port, ctx), queue),
                )
                .and_then(|v| parse_enqueue(py, v, ctx.queues.len()));
            view.borrow(py).write_back(ctx.pool.get_mut(pkt));
            r.map_err(|e| self.fail(py, "enqueue", e)).ok()
        });
        // The framework keeps the buffer: a scheme cannot accept what does not fit.
        match answer {
            Some(Enqueue::Accept { mark }) => ctx.push_if_fits(queue, pkt, mark),
            Some(Enqueue::PushOut {
                queue: victim_queue,
                head,
            }) => push_out(ctx, pkt, queue, victim_queue, head),
            Some(Enqueue::Drop) | None => Verdict::Dropped,
        }
    }

    fn schedule(&mut self, ctx: &mut PortCtx) -> Option<PktId> {
        if self.failed() {
            // Keep the network draining so the run can end.
            let q = ctx.next_nonempty_from(0)?;
            return ctx.pop(q);
        }
        let q = Python::attach(|py| {
            let _hook = crate::watchdog::enter();
            let r = self
                .obj
                .call_method1(py, "schedule", (PyPort::of(self.port, ctx),))
                .and_then(|v| v.extract::<Option<usize>>(py));
            match r {
                Ok(Some(q)) if q < ctx.queues.len() && !ctx.queues[q].is_empty() => Some(q),
                Ok(None) => None,
                Ok(Some(q)) => {
                    self.fail(
                        py,
                        "schedule",
                        pyo3::exceptions::PyValueError::new_err(format!(
                            "returned queue {q}, which is empty or does not exist"
                        )),
                    );
                    None
                }
                Err(e) => {
                    self.fail(py, "schedule", e);
                    None
                }
            }
        })?;
        ctx.pop(q)
    }
}

/// What a Python scheme's `enqueue` answered.
enum Enqueue {
    Accept {
        mark: bool,
    },
    Drop,
    /// Accept the arrival and drop the packet at the head (or tail) of `queue` instead.
    PushOut {
        queue: usize,
        head: bool,
    },
}

const ENQUEUE_ALLOWED: &str =
    "\"accept\", \"mark\", \"drop\", (\"drop_head\", QUEUE) or (\"drop_tail\", QUEUE)";

fn parse_enqueue(py: Python<'_>, v: Py<PyAny>, queues: usize) -> PyResult<Enqueue> {
    let bad = |what: String| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "returned {what}; allowed: {ENQUEUE_ALLOWED}"
        ))
    };
    if let Ok(word) = v.extract::<String>(py) {
        return match word.as_str() {
            "accept" => Ok(Enqueue::Accept { mark: false }),
            "mark" => Ok(Enqueue::Accept { mark: true }),
            "drop" => Ok(Enqueue::Drop),
            other => Err(bad(format!("{other:?}"))),
        };
    }
    let (word, queue) = v
        .extract::<(String, usize)>(py)
        .map_err(|_| bad(v.bind(py).repr().map(|r| r.to_string()).unwrap_or_default()))?;
    if queue >= queues {
        return Err(bad(format!(
            "({word:?}, {queue}) at a port with {queues} queues"
        )));
    }
    match word.as_str() {
        "drop_head" => Ok(Enqueue::PushOut { queue, head: true }),
        "drop_tail" => Ok(Enqueue::PushOut { queue, head: false }),
        other => Err(bad(format!("({other:?}, {queue})"))),
    }
}

/// Accepts `pkt` into `queue` by dropping the head or tail of `victim_queue`, if that
/// queue holds a packet and the arrival then fits; otherwise drops the arrival.
fn push_out(
    ctx: &mut PortCtx,
    pkt: PktId,
    queue: usize,
    victim_queue: usize,
    head: bool,
) -> Verdict {
    let q = &ctx.queues[victim_queue];
    if q.is_empty() {
        return ctx.push_if_fits(queue, pkt, false);
    }
    let victim = if head { q.head } else { q.tail };
    let freed = ctx.packet(victim).frame_bytes as u64;
    if !ctx.fits((ctx.packet(pkt).frame_bytes as u64).saturating_sub(freed)) {
        return Verdict::Dropped;
    }
    ctx.remove(victim_queue, victim);
    ctx.push(queue, pkt);
    Verdict::DroppedOther(victim)
}

/// A port's queue count and scheme instance, or why it could not be made.
type MadeScheme = Result<(u32, Box<dyn CustomScheme>), String>;

/// Makes the factory the core calls for `kind = "python"` ports: `classes` maps the
/// scenario's class strings to class objects; one instance per switch, shared by its ports.
pub fn factory(
    classes: Py<PyDict>,
    error: ErrorSlot,
) -> impl FnMut(&str, &str, &serde_json::Value, &PortSite) -> MadeScheme {
    let mut instances: HashMap<(String, u32), Py<PyAny>> = HashMap::new();
    move |_kind, class, params, site| {
        Python::attach(|py| {
            let key = (class.to_string(), site.switch_index);
            let obj = match instances.get(&key) {
                Some(o) => o.clone_ref(py),
                None => {
                    let cls = classes
                        .bind(py)
                        .get_item(class)
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("python class {class:?} was not loaded"))?;
                    let kwargs = PyDict::new(py);
                    if let Some(map) = params.as_object() {
                        for (k, v) in map {
                            kwargs
                                .set_item(k, json_to_py(py, v).map_err(|e| e.to_string())?)
                                .map_err(|e| e.to_string())?;
                        }
                    }
                    let made = {
                        let _hook = crate::watchdog::enter();
                        cls.call((site.switch_name, site.switch_ports), Some(&kwargs))
                    };
                    let call = format!(
                        "{class}({}, {}, **params)",
                        site.switch_name, site.switch_ports
                    );
                    let o = made.map_err(|e| match crate::watchdog::timeout_message(py, &e) {
                        Some(m) => format!("{call} {m}"),
                        None => format!(
                            "{call} raised {}",
                            e.value(py)
                                .repr()
                                .map(|r| r.to_string())
                                .unwrap_or_default()
                        ),
                    })?;
                    let o = o.unbind();
                    instances.insert(key, o.clone_ref(py));
                    o
                }
            };
            let queues = match obj.getattr(py, "queues") {
                Ok(q) => q
                    .extract::<u32>(py)
                    .map_err(|_| format!("{class}.queues must be an integer from 1 to 64"))?,
                Err(_) => 1,
            };
            let routes = obj.getattr(py, "route").is_ok();
            Ok((
                queues,
                Box::new(PyScheme {
                    obj,
                    class: class.to_string(),
                    port: site.local_port,
                    routes,
                    error: error.clone(),
                }) as Box<dyn CustomScheme>,
            ))
        })
    }
}

fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    let json = py.import("json")?;
    json.call_method1("loads", (v.to_string(),))
}
