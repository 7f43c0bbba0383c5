//! Python bindings for wscsim: conversion at the boundary only, no models here.

mod py_scheme;
mod py_service;
mod watchdog;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList};
use wscsim::metrics::Column;

/// A failed allocation ends the process with one line, not an abort and a backtrace.
#[global_allocator]
static ALLOCATOR: wscsim::memory::OneLineOnFailure = wscsim::memory::OneLineOnFailure;

// A scenario that failed validation: args are (field path, message).
pyo3::create_exception!(_native, ScenarioError, pyo3::exceptions::PyException);
// A Python scheme raised while the simulation called it.
pyo3::create_exception!(_native, SchemeError, pyo3::exceptions::PyException);

/// A capture point's pcap file: (name, bytes, packets kept, packets seen).
type Capture<'py> = (String, Bound<'py, PyBytes>, u64, u64);

#[pyclass(unsendable)]
struct Simulation {
    /// None once `tables` has consumed it.
    sim: Option<wscsim::Sim>,
    scheme_error: py_scheme::ErrorSlot,
    /// Python schemes or services run in it (their hooks are watched).
    python_code: bool,
}

#[pymethods]
impl Simulation {
    /// Builds a simulation from scenario JSON; raises ScenarioError(path, message).
    /// `schemes` maps the class strings of `kind = "python"` schemes to class objects.
    #[new]
    #[pyo3(signature = (scenario_json, schemes=None))]
    fn new(py: Python<'_>, scenario_json: &str, schemes: Option<Py<PyDict>>) -> PyResult<Self> {
        let python_code = schemes.is_some();
        // The classes' constructors are hooks too: watched while the simulation is built.
        let watch = python_code.then(|| {
            let limit = wscsim::config::parse_json(scenario_json)
                .ok()
                .and_then(|sc| sc.engine.and_then(|e| e.python_hook_timeout))
                .map_or(wscsim::config::DEFAULT_PYTHON_HOOK_TIMEOUT_PS, |d| d.0);
            watchdog::Watchdog::start(this_thread(py), ps_to_duration(limit))
        });
        let built = build(py, scenario_json, schemes);
        stop_watching(py, watch);
        let (sim, scheme_error) = built?;
        Ok(Simulation {
            sim: Some(sim),
            scheme_error,
            python_code,
        })
    }

    /// Runs until simulated time `until_ps`; returns True when the run has ended. A Python
    /// scheme that raised makes this raise SchemeError with its traceback.
    fn run_until(&mut self, py: Python<'_>, until_ps: u64) -> PyResult<bool> {
        let watched = self.python_code;
        let sim = self.sim_mut()?;
        let limit = hook_timeout(sim);
        let thread_id = this_thread(py);
        let done = py.detach(|| {
            // Stopped (and joined) before the lock is taken back: it may be waiting for it.
            let _watchdog = watched.then(|| watchdog::Watchdog::start(thread_id, limit));
            sim.run_until(until_ps)
        });
        // The engine stopped a run that made no progress: ScenarioError("run", why).
        let fault = sim.fault().map(str::to_string);
        if let Some(msg) = self.scheme_error.lock().unwrap().take() {
            return Err(SchemeError::new_err(msg));
        }
        if let Some(why) = fault {
            return Err(ScenarioError::new_err(("run", why)));
        }
        Ok(done)
    }

    #[getter]
    fn now_ps(&self) -> PyResult<u64> {
        Ok(self.sim()?.now_ps())
    }

    /// Events run so far (for progress: events per second).
    #[getter]
    fn events(&self) -> PyResult<u64> {
        Ok(self.sim()?.ev.events_processed())
    }

    #[getter]
    fn end_ps(&self) -> PyResult<u64> {
        Ok(self.sim()?.end_ps())
    }

    #[getter]
    fn finished(&self) -> PyResult<bool> {
        Ok(self.sim()?.finished())
    }

    /// How many hosts the topology has.
    #[getter]
    fn hosts(&self) -> PyResult<usize> {
        Ok(self.sim()?.net.n_hosts())
    }

    /// Each host's link MTU (bytes of IP packet), by host index.
    #[getter]
    fn host_mtus(&self) -> PyResult<Vec<u32>> {
        let net = &self.sim()?.net;
        Ok((0..net.n_hosts() as u32)
            .map(|h| net.host_link(h).mtu_bytes)
            .collect())
    }

    /// Packet captures as [(name, pcap bytes, packets kept, packets seen)].
    fn captures<'py>(&self, py: Python<'py>) -> PyResult<Vec<Capture<'py>>> {
        Ok(self
            .sim()?
            .captures()
            .into_iter()
            .map(|(name, data, kept, seen)| (name, PyBytes::new(py, &data), kept, seen))
            .collect())
    }

    /// Summary as a JSON string. A Python service whose `results` raised makes this raise
    /// SchemeError.
    fn summary_json(&self, py: Python<'_>) -> PyResult<String> {
        let sim = self.sim()?;
        // Services' `results` are hooks too.
        let watch = self
            .python_code
            .then(|| watchdog::Watchdog::start(this_thread(py), hook_timeout(sim)));
        let text = sim.summary().to_string();
        stop_watching(py, watch);
        if let Some(msg) = self.scheme_error.lock().unwrap().take() {
            return Err(SchemeError::new_err(msg));
        }
        Ok(text)
    }

    /// Tables as {name: [(column, kind, data)]} where kind is "f8"/"i8"/"i4" (data: bytes
    /// of little-endian values, for numpy.frombuffer), "str" (data: list of str) or "cat"
    /// (data: (levels, bytes of one-byte codes)). Consumes the simulation, whose memory is
    /// released before the largest table is built (a full-length memcached run has tens
    /// of millions of requests): call it once, last.
    fn tables<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sim = self.sim.take().ok_or_else(taken)?;
        tables_as_dict(py, sim.into_tables())
    }
}

impl Simulation {
    fn sim(&self) -> PyResult<&wscsim::Sim> {
        self.sim.as_ref().ok_or_else(taken)
    }

    fn sim_mut(&mut self) -> PyResult<&mut wscsim::Sim> {
        self.sim.as_mut().ok_or_else(taken)
    }
}

/// How long one Python hook may run (wall time): `engine.python_hook_timeout`.
fn hook_timeout(sim: &wscsim::Sim) -> std::time::Duration {
    let ps = sim
        .scenario
        .engine
        .as_ref()
        .and_then(|e| e.python_hook_timeout)
        .map_or(wscsim::config::DEFAULT_PYTHON_HOOK_TIMEOUT_PS, |d| d.0);
    ps_to_duration(ps)
}

fn ps_to_duration(ps: u64) -> std::time::Duration {
    std::time::Duration::from_nanos(ps / 1_000)
}

/// The Python id of the calling thread, which runs the hooks.
fn this_thread(_py: Python<'_>) -> std::os::raw::c_ulong {
    // SAFETY: reads the calling thread's id; the interpreter lock is held (`_py`).
    unsafe { pyo3::ffi::PyThread_get_thread_ident() }
}

/// Stops a watchdog started while this thread held the interpreter lock: without the
/// lock, since the watchdog's thread may be waiting for it to interrupt a hook.
fn stop_watching(py: Python<'_>, watch: Option<watchdog::Watchdog>) {
    py.detach(move || drop(watch));
}

/// The error of a Simulation used after `tables` consumed it.
fn taken() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err(
        "this Simulation's tables were taken, which ends it; make a new one",
    )
}

/// Builds a simulation from scenario JSON; raises ScenarioError(path, message).
fn build(
    py: Python<'_>,
    scenario_json: &str,
    schemes: Option<Py<PyDict>>,
) -> PyResult<(wscsim::Sim, py_scheme::ErrorSlot)> {
    let error: py_scheme::ErrorSlot = Default::default();
    let result = match &schemes {
        Some(classes) => {
            let mut f = py_scheme::factory(classes.clone_ref(py), error.clone());
            wscsim::Sim::from_json_with(scenario_json, Some(&mut f))
        }
        None => wscsim::Sim::from_json(scenario_json),
    };
    let mut sim = match result {
        Ok(sim) => sim,
        Err(e) => return Err(ScenarioError::new_err((e.path, e.message))),
    };
    if let Some(classes) = schemes {
        add_python_services(py, &mut sim, classes.bind(py), &error)?;
    }
    Ok((sim, error))
}

/// A run's tables, as `Simulation.tables` gives them.
fn tables_as_dict(
    py: Python<'_>,
    tables: Vec<wscsim::metrics::Table>,
) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for t in tables {
        let cols = PyList::empty(py);
        for (name, col) in t.columns {
            let item = match col {
                Column::F64(v) => (name, "f8", le_bytes(py, v, f64::to_le_bytes)?),
                Column::I64(v) => (name, "i8", le_bytes(py, v, i64::to_le_bytes)?),
                Column::I32(v) => (name, "i4", le_bytes(py, v, i32::to_le_bytes)?),
                Column::Str(v) => (name, "str", PyList::new(py, v)?.into_any()),
                Column::Cat { levels, codes } => (
                    name,
                    "cat",
                    (levels.to_vec(), PyBytes::new(py, &codes))
                        .into_pyobject(py)?
                        .into_any(),
                ),
            };
            cols.append(item)?;
        }
        out.set_item(t.name, cols)?;
    }
    Ok(out)
}

/// A scenario run in real time over real frames (`wscsim::emulate`).
#[pyclass(unsendable)]
struct Emulation {
    emu: wscsim::emulate::Emulator,
    scheme_error: py_scheme::ErrorSlot,
}

#[pymethods]
impl Emulation {
    /// Builds the scenario and opens a TAP device named `ifname` in each host's network
    /// namespace (`netns[h]`, made by the caller); raises ScenarioError or OSError.
    #[new]
    #[pyo3(signature = (scenario_json, netns, ifname, schemes=None))]
    fn new(
        py: Python<'_>,
        scenario_json: &str,
        netns: Vec<String>,
        ifname: &str,
        schemes: Option<Py<PyDict>>,
    ) -> PyResult<Self> {
        let (sim, scheme_error) = build(py, scenario_json, schemes)?;
        let emu = wscsim::emulate::Emulator::new(sim, &netns, ifname)?;
        Ok(Emulation { emu, scheme_error })
    }

    /// Runs in real time for `wall_ps` more (released from the GIL); returns True when the
    /// scenario's end is reached.
    fn run_for(&mut self, py: Python<'_>, wall_ps: u64) -> PyResult<bool> {
        let emu = &mut self.emu;
        let done = py.detach(|| emu.run_for(wall_ps))?;
        if let Some(msg) = self.scheme_error.lock().unwrap().take() {
            return Err(SchemeError::new_err(msg));
        }
        Ok(done)
    }

    #[getter]
    fn now_ps(&self) -> u64 {
        self.emu.sim.now_ps()
    }

    #[getter]
    fn end_ps(&self) -> u64 {
        self.emu.sim.end_ps()
    }

    /// The simulation's summary with the emulation's figures under "emulation", as JSON.
    fn summary_json(&self) -> PyResult<String> {
        let mut s = self.emu.sim.summary();
        s["emulation"] = self.emu.summary();
        Ok(s.to_string())
    }

    fn tables<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tables_as_dict(py, self.emu.sim.take_tables())
    }

    /// pcap files of the real frames of `emulation.capture`'s hosts: [(name, bytes)].
    fn captures<'py>(&self, py: Python<'py>) -> Vec<(String, Bound<'py, PyBytes>)> {
        self.emu
            .captures()
            .into_iter()
            .map(|(name, data)| (name, PyBytes::new(py, &data)))
            .collect()
    }
}

/// Makes each of the scenario's Python services (`runtime.services`), `Class(**params)`
/// from `classes`, and adds it to the runtime under its id.
fn add_python_services(
    py: Python<'_>,
    sim: &mut wscsim::Sim,
    classes: &Bound<'_, PyDict>,
    error: &py_scheme::ErrorSlot,
) -> PyResult<()> {
    for (i, s) in sim.python_services.clone().into_iter().enumerate() {
        let path = format!("runtime.services[{i}].class");
        let fail = |m: String| ScenarioError::new_err((path.clone(), m));
        let cls = classes
            .get_item(&s.class)?
            .ok_or_else(|| fail(format!("given {:?}; the class was not loaded", s.class)))?;
        let kwargs = PyDict::new(py);
        let json = py.import("json")?;
        for (k, v) in &s.params {
            kwargs.set_item(k, json.call_method1("loads", (v.to_string(),))?)?;
        }
        let made = {
            let _hook = watchdog::enter();
            cls.call((), Some(&kwargs))
        };
        let obj = made.map_err(|e| match watchdog::timeout_message(py, &e) {
            Some(m) => fail(format!("given {:?}; {}(**params) {m}", s.class, s.class)),
            None => fail(format!(
                "given {:?}; {}(**params) raised {}",
                s.class,
                s.class,
                e.value(py)
            )),
        })?;
        let code =
            py_service::PyService::new(obj.unbind(), &s.class, path.clone(), s.id, error.clone());
        sim.add_service(s.id, Box::new(code)).map_err(fail)?;
    }
    Ok(())
}

/// Values per step of `le_bytes`: the column gives its memory back this often.
const LE_STEP: usize = 1 << 20;

/// A column as a bytearray of its little-endian values, made without zero-filling it (so
/// its pages are touched only as they are written) and filled from the back while the
/// column gives its memory back step by step (shrinking a large allocation returns its
/// pages): a column of hundreds of megabytes is never held twice.
fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    mut v: Vec<T>,
    to_le: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyAny>> {
    let len = v.len() * N;
    if len == 0 {
        return Ok(PyByteArray::new(py, &[]).into_any());
    }
    // SAFETY: a new bytearray of `len` uninitialised bytes, or NULL with a Python error set.
    let out = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyByteArray_FromStringAndSize(std::ptr::null(), len as isize),
        )?
    };
    // SAFETY: the bytearray's buffer holds `len` bytes and nothing else refers to it yet;
    // every byte is written below before Python can read it.
    let buf = unsafe {
        std::slice::from_raw_parts_mut(
            pyo3::ffi::PyByteArray_AsString(out.as_ptr()) as *mut u8,
            len,
        )
    };
    let mut end = v.len();
    while end > 0 {
        let start = end.saturating_sub(LE_STEP);
        for (chunk, &x) in buf[start * N..end * N]
            .chunks_exact_mut(N)
            .zip(&v[start..end])
        {
            chunk.copy_from_slice(&to_le(x));
        }
        v.truncate(start);
        v.shrink_to_fit();
        end = start;
    }
    Ok(out)
}

/// Validates scenario JSON; returns the scenario with every default filled in, as JSON.
/// With `build`, also builds its simulation (without running it or any Python code), so
/// that the refusals a run makes as it starts are made too. Raises
/// ScenarioError(path, message).
#[pyfunction]
#[pyo3(signature = (scenario_json, build = false))]
fn check(scenario_json: &str, build: bool) -> PyResult<String> {
    let checked = if build {
        wscsim::Sim::dry_build_json(scenario_json)
    } else {
        wscsim::Sim::check_json(scenario_json)
    };
    match checked {
        Ok(v) => Ok(v.to_string()),
        Err(e) => Err(ScenarioError::new_err((e.path, e.message))),
    }
}

/// Lists of the names the scenario schema accepts, for `wscsim list`.
#[pyfunction]
fn catalogue<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    use wscsim::config::{kinds::names, resolve as r};
    let d = PyDict::new(py);
    d.set_item("topologies", names(wscsim::config::topology::TOPOLOGIES))?;
    d.set_item("workloads", names(r::WORKLOADS))?;
    d.set_item("diablo_presets", r::DIABLO_PRESETS.to_vec())?;
    d.set_item("schemes", names(wscsim::config::scheme::SCHEMES))?;
    d.set_item("link_technologies", wscsim::net::link::LinkTech::names())?;
    d.set_item(
        "size_cdfs",
        r::BUILTIN_CDFS.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
    )?;
    d.set_item("host_stacks", wscsim::host::presets::names())?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_class::<Emulation>()?;
    m.add_function(wrap_pyfunction!(catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SchemeError", m.py().get_type::<SchemeError>())?;
    m.add("HookTimeout", m.py().get_type::<watchdog::HookTimeout>())?;
    m.add_class::<py_scheme::PyPacket>()?;
    m.add_class::<py_scheme::PyPort>()?;
    m.add_class::<py_service::PyServicePacket>()?;
    m.add_class::<py_service::PyServiceCtx>()?;
    m.add("VERSION", wscsim::VERSION)?;
    // The compiler that built the module (empty when the build could not ask it).
    m.add("RUSTC_VERSION", env!("WSCSIM_RUSTC_VERSION"))?;
    // The commit it was built from (empty when not built from a git checkout).
    m.add("GIT_COMMIT", env!("WSCSIM_GIT_COMMIT"))?;
    Ok(())
}
