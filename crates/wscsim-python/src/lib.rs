//! Python bindings for wscsim: conversion at the boundary only, no models here.

mod py_scheme;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use wscsim::metrics::Column;

// A scenario that failed validation: args are (field path, message).
pyo3::create_exception!(_native, ScenarioError, pyo3::exceptions::PyException);
// A Python scheme raised while the simulation called it.
pyo3::create_exception!(_native, SchemeError, pyo3::exceptions::PyException);

#[pyclass(unsendable)]
struct Simulation {
    sim: wscsim::Sim,
    scheme_error: py_scheme::ErrorSlot,
}

#[pymethods]
impl Simulation {
    /// Builds a simulation from scenario JSON; raises ScenarioError(path, message).
    /// `schemes` maps the class strings of `kind = "python"` schemes to class objects.
    #[new]
    #[pyo3(signature = (scenario_json, schemes=None))]
    fn new(scenario_json: &str, schemes: Option<Py<PyDict>>) -> PyResult<Self> {
        let error: py_scheme::ErrorSlot = Default::default();
        let result = match schemes {
            Some(classes) => {
                let mut f = py_scheme::factory(classes, error.clone());
                wscsim::Sim::from_json_with(scenario_json, Some(&mut f))
            }
            None => wscsim::Sim::from_json(scenario_json),
        };
        match result {
            Ok(sim) => Ok(Simulation { sim, scheme_error: error }),
            Err(e) => Err(ScenarioError::new_err((e.path, e.message))),
        }
    }

    /// Runs until simulated time `until_ps`; returns True when the run has ended. A Python
    /// scheme that raised makes this raise SchemeError with its traceback.
    fn run_until(&mut self, py: Python<'_>, until_ps: u64) -> PyResult<bool> {
        let sim = &mut self.sim;
        let done = py.detach(|| sim.run_until(until_ps));
        if let Some(msg) = self.scheme_error.lock().unwrap().take() {
            return Err(SchemeError::new_err(msg));
        }
        Ok(done)
    }

    #[getter]
    fn now_ps(&self) -> u64 {
        self.sim.now_ps()
    }

    #[getter]
    fn end_ps(&self) -> u64 {
        self.sim.end_ps()
    }

    #[getter]
    fn finished(&self) -> bool {
        self.sim.finished()
    }

    /// Summary as a JSON string.
    fn summary_json(&self) -> String {
        self.sim.summary().to_string()
    }

    /// Tables as {name: [(column, kind, data)]} where kind is "f8"/"i8" (data: bytes of
    /// little-endian values, for numpy.frombuffer) or "str" (data: list of str).
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for t in self.sim.tables() {
            let cols = PyList::empty(py);
            for (name, col) in t.columns {
                let item = match col {
                    Column::F64(v) => {
                        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                        (name, "f8", PyBytes::new(py, &b).into_any())
                    }
                    Column::I64(v) => {
                        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                        (name, "i8", PyBytes::new(py, &b).into_any())
                    }
                    Column::Str(v) => (name, "str", PyList::new(py, v)?.into_any()),
                };
                cols.append(item)?;
            }
            out.set_item(t.name, cols)?;
        }
        Ok(out)
    }
}

/// Lists of the names the scenario schema accepts, for `wscsim list`.
#[pyfunction]
fn catalogue<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    use wscsim::config::resolve as r;
    let d = PyDict::new(py);
    d.set_item("topologies", r::TOPOLOGY_KINDS.to_vec())?;
    d.set_item("workloads", r::WORKLOAD_KINDS.to_vec())?;
    d.set_item("diablo_presets", r::DIABLO_PRESETS.to_vec())?;
    d.set_item("schemes", r::SCHEMES.to_vec())?;
    d.set_item("size_cdfs", r::BUILTIN_CDFS.iter().map(|(n, _)| *n).collect::<Vec<_>>())?;
    d.set_item("host_stacks", wscsim::host::presets::STACKS.to_vec())?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(catalogue, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SchemeError", m.py().get_type::<SchemeError>())?;
    m.add_class::<py_scheme::PyPacket>()?;
    m.add_class::<py_scheme::PyPort>()?;
    m.add("VERSION", wscsim::VERSION)?;
    Ok(())
}
