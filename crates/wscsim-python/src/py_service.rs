//! Python services of CamCubeOS's runtime (`[[runtime.services]]`): a class with `deliver`
//! and optionally `start`, `on_path`, `on_timer` and `results`, one instance for the whole
//! cube (as a built-in service's state covers every server), called through the
//! `ServiceCode` trait. The class sees the packet as a small view and the runtime through a
//! context whose `send` and `timer` calls are recorded and carried out when the method
//! returns (a context kept past its call refuses them). For prototyping: every call
//! crosses into the interpreter. A method that raises stops nothing at once: the first
//! error is kept, later calls are skipped, and the run slice that saw it raises (for
//! `results`, the summary), naming the service's entry in `runtime.services`.

use crate::py_scheme::ErrorSlot;
use pyo3::prelude::*;
use wscsim::engine::{Clock, Scheduler};
use wscsim::packet::{Packet, PktId, Proto, TO_KEY};
use wscsim::services::user::{Dyn, ServiceCode};
use wscsim::services::{OnPath, SvcCtx, SvcEvent, SERVICE_HEADER_BYTES};

/// A service's packet as Python sees it. `seq` and `fields` (two integers) may be changed
/// on the path and travel on with the packet; the rest is read-only.
#[pyclass(name = "ServicePacket", module = "wscsim")]
pub struct PyServicePacket {
    #[pyo3(get)]
    src: u32,
    /// The destination server; None while the packet is addressed to a key.
    #[pyo3(get)]
    dst: Option<u32>,
    /// The key's routing bits (bits 63-0 of a CamCubeOS key) of a packet sent to a key
    /// (it keeps them once delivered at the root); 0 for a packet sent to a server.
    #[pyo3(get)]
    key: u64,
    /// Payload bytes.
    #[pyo3(get)]
    size: u32,
    /// Links crossed so far.
    #[pyo3(get)]
    hops: u32,
    /// When it was sent, in picoseconds.
    #[pyo3(get)]
    sent_ps: u64,
    #[pyo3(get, set)]
    seq: u64,
    #[pyo3(get, set)]
    fields: [u32; 2],
}

impl PyServicePacket {
    fn of(p: &Packet) -> Self {
        let to_key = p.dst_host == TO_KEY;
        PyServicePacket {
            src: p.src_host,
            dst: (!to_key).then_some(p.dst_host),
            key: p.key,
            size: p.payload_bytes,
            hops: u32::from(p.hops),
            sent_ps: p.ts_ps,
            seq: p.seq,
            fields: p.scheme_fields,
        }
    }
    fn write_back(&self, p: &mut Packet) {
        p.seq = self.seq;
        p.scheme_fields = self.fields;
    }
}

/// What a service asked for during one call.
enum Action {
    Send {
        src: u32,
        dst: u32,
        key: u64,
        size: u32,
        seq: u64,
        fields: [u32; 2],
    },
    Timer {
        at_ps: u64,
        tag: u32,
    },
}

/// The runtime as a Python service sees it during one call. It lends the service the
/// network for queries (`servers_for_key`, `reachable`) only while the call runs; the class
/// stays on the thread that made it (`unsendable`), as the pointer must.
#[pyclass(name = "ServiceContext", module = "wscsim", unsendable)]
pub struct PyServiceCtx {
    /// Simulated time now, in picoseconds.
    #[pyo3(get)]
    now_ps: u64,
    /// Servers of the torus (addresses 0 to servers - 1).
    #[pyo3(get)]
    servers: u32,
    /// This service's id (its packets carry it).
    #[pyo3(get)]
    service: u16,
    /// The largest payload a packet may carry (the link's MTU less the runtime's header).
    #[pyo3(get)]
    max_size: u32,
    actions: Vec<Action>,
    /// False once the call it was made for has returned.
    open: bool,
    /// The network the call borrowed (its runtime's views), null once it has returned.
    net: *mut wscsim::net::Network,
}

impl PyServiceCtx {
    fn check_open(&self, what: &str) -> PyResult<()> {
        if self.open {
            return Ok(());
        }
        Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "{what}: this context belongs to a call that has returned; use the ctx of the \
             call being made"
        )))
    }

    /// `server` is a server of the torus, else a ValueError naming `what`'s `field`.
    fn check_server(&self, what: &str, field: &str, server: u32) -> PyResult<()> {
        if server < self.servers {
            return Ok(());
        }
        Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what}: {field} given {server}; allowed: 0 to {}",
            self.servers - 1
        )))
    }

    /// The network, during the call (`check_open` first).
    fn net(&mut self) -> &mut wscsim::net::Network {
        debug_assert!(self.open && !self.net.is_null());
        // SAFETY: the context is open, so `PyService::call`, which derived the pointer from
        // its `&mut Network` and does not touch the network until the Python method
        // returns, is still waiting on this call; the class cannot leave this thread.
        unsafe { &mut *self.net }
    }
}

#[pymethods]
impl PyServiceCtx {
    /// Sends a packet of `size` payload bytes from server `src` to server `dst` or to the
    /// root of `key` (the low 64 bits of a CamCubeOS key); `seq` and `fields` travel with it.
    #[pyo3(signature = (src, size, dst=None, key=None, seq=0, fields=(0, 0)))]
    fn send(
        &mut self,
        src: u32,
        size: u32,
        dst: Option<u32>,
        key: Option<u64>,
        seq: u64,
        fields: (u32, u32),
    ) -> PyResult<()> {
        self.check_open("send")?;
        let bad = |m: String| Err(pyo3::exceptions::PyValueError::new_err(m));
        self.check_server("send", "src", src)?;
        if !(1..=self.max_size).contains(&size) {
            return bad(format!(
                "send: size given {size}; allowed: 1 to {} bytes",
                self.max_size
            ));
        }
        let (dst, key) = match (dst, key) {
            (Some(d), None) => {
                self.check_server("send", "dst", d)?;
                (d, 0)
            }
            (None, Some(k)) => (TO_KEY, k),
            _ => return bad("send: give one of dst (a server) and key".into()),
        };
        self.actions.push(Action::Send {
            src,
            dst,
            key,
            size,
            seq,
            fields: [fields.0, fields.1],
        });
        Ok(())
    }

    /// Sets a timer: `on_timer(ctx, tag)` is called at `at_ps` (not before now).
    fn timer(&mut self, at_ps: u64, tag: u32) -> PyResult<()> {
        self.check_open("timer")?;
        if at_ps < self.now_ps {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "timer: at_ps given {at_ps}; allowed: now ({}) or later",
                self.now_ps
            )));
        }
        self.actions.push(Action::Timer { at_ps, tag });
        Ok(())
    }

    /// Sets a timer `delay_ps` from now.
    fn after(&mut self, delay_ps: u64, tag: u32) -> PyResult<()> {
        self.timer(self.now_ps.saturating_add(delay_ps), tag)
    }

    /// `GetServersForKey(key, r)` as server `host`'s view has it now: the key's root
    /// first, then the servers that would take its keys over in turn (the servers its
    /// view cannot reach left out).
    #[pyo3(signature = (host, key, r=1))]
    fn servers_for_key(&mut self, host: u32, key: u64, r: u32) -> PyResult<Vec<u32>> {
        self.check_open("servers_for_key")?;
        self.check_server("servers_for_key", "host", host)?;
        if !(1..=self.servers).contains(&r) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "servers_for_key: r given {r}; allowed: 1 to {}",
                self.servers
            )));
        }
        let now = self.now_ps;
        Ok(self.net().servers_for_key(host, key, r as usize, now))
    }

    /// Whether server `host`'s view has a working path to server `dst` (a server it knows
    /// has failed is unreachable).
    fn reachable(&mut self, host: u32, dst: u32) -> PyResult<bool> {
        self.check_open("reachable")?;
        self.check_server("reachable", "host", host)?;
        self.check_server("reachable", "dst", dst)?;
        Ok(self.net().reachable_in_view(host, dst))
    }
}

pub struct PyService {
    obj: Py<PyAny>,
    class: String,
    /// Its entry in the scenario (`runtime.services[i].class`), which errors name first.
    path: String,
    id: u16,
    error: ErrorSlot,
    sent: u64,
}

impl PyService {
    pub fn new(obj: Py<PyAny>, class: &str, path: String, id: u16, error: ErrorSlot) -> Self {
        PyService {
            obj,
            class: class.to_string(),
            path,
            id,
            error,
            sent: 0,
        }
    }

    fn fail(&self, py: Python<'_>, method: &str, e: PyErr) {
        let mut slot = self.error.lock().unwrap();
        if slot.is_none() {
            let tb = e
                .traceback(py)
                .and_then(|t| t.format().ok())
                .unwrap_or_default();
            let what = e
                .value(py)
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_default();
            *slot = Some(match crate::watchdog::timeout_message(py, &e) {
                Some(m) => format!("{}: {}.{method} {m}", self.path, self.class),
                None => format!("{}: {}.{method} raised {what}\n{tb}", self.path, self.class),
            });
        }
    }

    fn failed(&self) -> bool {
        self.error.lock().unwrap().is_some()
    }

    /// Calls `method` (if the class has it) with a fresh context and `args` after it, then
    /// carries out what the context recorded. Returns the method's result.
    fn call(
        &mut self,
        ctx: &mut SvcCtx<Dyn>,
        method: &str,
        args: impl FnOnce(Python<'_>) -> Vec<Py<PyAny>>,
    ) -> Option<Py<PyAny>> {
        if self.failed() {
            return None;
        }
        let tech = ctx.net.host_link(0);
        let max_size = tech.mtu_bytes - SERVICE_HEADER_BYTES;
        let c = PyServiceCtx {
            now_ps: ctx.ev.now(),
            servers: ctx.net.torus_servers().min(ctx.net.n_hosts() as u32),
            service: self.id,
            max_size,
            actions: Vec::new(),
            open: true,
            net: &mut *ctx.net,
        };
        let (result, actions) = Python::attach(|py| {
            if !self.obj.bind(py).hasattr(method).unwrap_or(false) {
                return (None, Vec::new());
            }
            let c = match Py::new(py, c) {
                Ok(c) => c,
                Err(e) => {
                    self.fail(py, method, e);
                    return (None, Vec::new());
                }
            };
            let mut all = vec![c.clone_ref(py).into_any()];
            all.extend(args(py));
            let tuple = pyo3::types::PyTuple::new(py, all).expect("a tuple of objects");
            // The context is closed however the method ends, a Rust panic unwinding through
            // it included, so that one it kept never reaches the network again.
            let obj = &self.obj;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _hook = crate::watchdog::enter();
                obj.call_method1(py, method, tuple)
            }));
            let actions = {
                let mut c = c.borrow_mut(py);
                c.open = false;
                c.net = std::ptr::null_mut();
                std::mem::take(&mut c.actions)
            };
            let r = r.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match r {
                Ok(v) => (Some(v), actions),
                Err(e) => {
                    self.fail(py, method, e);
                    (None, Vec::new())
                }
            }
        });
        for a in actions {
            self.act(ctx, a);
        }
        result
    }

    fn act(&mut self, ctx: &mut SvcCtx<Dyn>, a: Action) {
        match a {
            Action::Timer { at_ps, tag } => ctx.ev.schedule(
                at_ps,
                SvcEvent::Timer {
                    service: self.id,
                    tag,
                },
            ),
            Action::Send {
                src,
                dst,
                key,
                size,
                seq,
                fields,
            } => {
                // A failed server's services do not run.
                if !ctx.net.host_up(src) {
                    return;
                }
                self.sent += 1;
                let frame = ctx.net.frame_bytes(src, size + SERVICE_HEADER_BYTES);
                let pkt = ctx.net.pool_mut().alloc(Packet {
                    proto: Proto::SERVICE,
                    dst_port: self.id,
                    src_host: src,
                    dst_host: dst,
                    key,
                    seq,
                    scheme_fields: fields,
                    ts_ps: ctx.ev.now(),
                    payload_bytes: size,
                    frame_bytes: frame,
                    hash: wscsim::engine::rng::mix64(self.sent ^ u64::from(self.id) << 48) as u32,
                    ..Default::default()
                });
                ctx.hosts.send(ctx.net, ctx.ev, src, pkt);
            }
        }
    }

    fn view(&self, py: Python<'_>, p: &Packet) -> Option<Py<PyServicePacket>> {
        Py::new(py, PyServicePacket::of(p)).ok()
    }
}

impl ServiceCode for PyService {
    fn start(&mut self, ctx: &mut SvcCtx<Dyn>) {
        self.call(ctx, "start", |_| Vec::new());
    }

    fn on_path(&mut self, ctx: &mut SvcCtx<Dyn>, host: u32, pkt: PktId) -> OnPath {
        let Some(view) = Python::attach(|py| self.view(py, ctx.net.pool().get(pkt))) else {
            return OnPath::Forward;
        };
        let v = Python::attach(|py| view.clone_ref(py));
        let r = self.call(ctx, "on_path", |py| {
            vec![
                host.into_pyobject(py).unwrap().into_any().unbind(),
                v.into_any(),
            ]
        });
        let verdict = Python::attach(|py| {
            view.borrow(py).write_back(ctx.net.pool_mut().get_mut(pkt));
            match r.as_ref().map(|v| v.extract::<Option<String>>(py)) {
                None | Some(Ok(None)) => Ok(false),
                Some(Ok(Some(s))) if s == "forward" => Ok(false),
                Some(Ok(Some(s))) if s == "drop" => Ok(true),
                Some(Ok(Some(s))) => Err(format!("returned {s:?}")),
                Some(Err(_)) => Err("returned something other than a string".into()),
            }
            .map_err(|m| {
                self.fail(
                    py,
                    "on_path",
                    pyo3::exceptions::PyValueError::new_err(format!(
                        "{m}; allowed: None, \"forward\" or \"drop\""
                    )),
                )
            })
            .unwrap_or(false)
        });
        if !verdict {
            return OnPath::Forward;
        }
        let (now, port) = (ctx.ev.now(), ctx.net.nic_port(host));
        ctx.net.drop_packet(now, port, pkt);
        OnPath::Taken
    }

    fn deliver(&mut self, ctx: &mut SvcCtx<Dyn>, host: u32, pkt: PktId) {
        if let Some(view) = Python::attach(|py| self.view(py, ctx.net.pool().get(pkt))) {
            self.call(ctx, "deliver", |py| {
                vec![
                    host.into_pyobject(py).unwrap().into_any().unbind(),
                    view.into_any(),
                ]
            });
        }
        ctx.net.delivered(pkt);
    }

    fn on_timer(&mut self, ctx: &mut SvcCtx<Dyn>, tag: u32) {
        self.call(ctx, "on_timer", |py| {
            vec![tag.into_pyobject(py).unwrap().into_any().unbind()]
        });
    }

    fn results(&self) -> Option<serde_json::Value> {
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            if !obj.hasattr("results").ok()? {
                return None;
            }
            // Strict JSON (no NaN or infinities), as summary.json is.
            let kwargs = pyo3::types::PyDict::new(py);
            let text = kwargs
                .set_item("allow_nan", false)
                .and_then(|_| {
                    let _hook = crate::watchdog::enter();
                    obj.call_method0("results")
                })
                .and_then(|r| {
                    let json = py.import("json")?;
                    json.call_method("dumps", (r,), Some(&kwargs))
                })
                .and_then(|s| s.extract::<String>());
            match text.map(|t| serde_json::from_str(&t)) {
                Ok(Ok(v)) => Some(v),
                Ok(Err(e)) => {
                    let e = pyo3::exceptions::PyValueError::new_err(e.to_string());
                    self.fail(py, "results", e);
                    None
                }
                Err(e) => {
                    self.fail(py, "results", e);
                    None
                }
            }
        })
    }
}
