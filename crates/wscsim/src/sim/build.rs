//! Building a simulation from a scenario: resolve it, build the network, hosts,
//! transports, applications and services, and schedule what starts the run.

use super::prefetch::FAR_PREFETCH_FROM_BYTES;
use super::setup::*;
use super::*;

impl Sim {
    /// Builds a simulation from scenario JSON, refusing bad input with a named field.
    pub fn from_json(text: &str) -> Result<Sim, ConfigError> {
        let sc = config::parse_json(text)?;
        Self::from_scenario(sc)
    }

    /// Validates scenario JSON without building the network (fast even for the largest
    /// topologies); returns the scenario with every default filled in.
    pub fn check_json(text: &str) -> Result<serde_json::Value, ConfigError> {
        let r = config::resolve(config::parse_json(text)?)?;
        Ok(serde_json::to_value(&r.scenario).expect("a resolved scenario serialises"))
    }

    pub fn from_scenario(sc: Scenario) -> Result<Sim, ConfigError> {
        Self::from_scenario_with(sc, None)
    }

    /// Like `from_json`, with a factory for custom (`kind = "python"` or user) schemes.
    pub fn from_json_with(
        text: &str,
        custom: Option<&mut CustomFactory>,
    ) -> Result<Sim, ConfigError> {
        Self::from_scenario_with(config::parse_json(text)?, custom)
    }

    pub fn from_scenario_with(
        sc: Scenario,
        custom: Option<&mut CustomFactory>,
    ) -> Result<Sim, ConfigError> {
        let r = config::resolve(sc)?;
        if !r.python_services.is_empty() && custom.is_none() {
            return Err(ConfigError {
                path: "runtime.services".into(),
                message: "given Python services; allowed: none here (they run from the Python front end: wscsim run, or wscsim.run)".into(),
            });
        }
        Self::build(r, custom)
    }

    pub(super) fn build(
        r: Resolved,
        custom: Option<&mut CustomFactory>,
    ) -> Result<Sim, ConfigError> {
        let Resolved {
            scenario,
            graph,
            switch,
            tcp,
            workload,
            host,
            failures,
            service_queues,
            tunnel,
            pack,
            python_services,
            power,
            dma,
            messages,
        } = r;
        let (mut net, hosts) = network_and_hosts(&graph, &switch, custom, host, pack)?;
        messages.check_network(&net)?;
        net.track_nic_departures(tcp.tsq_limit_bytes > 0);
        let mut ev = EventQueue::new();
        // What `Sim::hosts_run_anywhere` will find, as far as the build knows it.
        let anywhere = workload.runs_in_partitions() && tunnel.is_none() && !hosts.packing;
        let anywhere = anywhere && python_services.is_empty();
        let balance = partition_if_asked(&mut net, &mut ev, scenario.engine.as_ref(), anywhere)?;
        let mut transports =
            crate::transport::Transports::build(&crate::transport::TransportBuild {
                net: &net,
                partitioned: ev.is_partitioned(),
                end_ps: scenario.duration.0,
                tcp,
                dma,
                messages,
            });
        if let Some(t) = &scenario.metrics.trace {
            install_traces(&mut net, &mut transports.tcp, &graph, t);
        }
        let mut services = workload.services(&net)?;
        services.tunnel = tunnel.map(crate::services::tunnel::Tunnel::new);
        let slots = timeslot_engine(&workload, &scenario, &net)?;
        let apps = Apps::build(
            workload,
            &mut transports.tcp,
            scenario.seed,
            net.n_hosts() as u32,
            scenario.duration.0,
        );
        if let Some(c) = &scenario.metrics.capture {
            install_captures(&mut net, &graph, c)?;
        }
        let metrics = metrics_for(&scenario.metrics);
        install_forwarding(&mut net, &failures, service_queues, scenario.seed);
        schedule_failures(&mut ev, &net, &graph, &failures);
        let failed_hosts = failed_hosts(&failures, &net);
        Ok(Sim {
            deep_prefetch: net.port_state_bytes() > FAR_PREFETCH_FROM_BYTES, // before `net` moves
            stall_limit: stall::limit(scenario.engine.as_ref()),
            scenario,
            ev,
            net,
            hosts,
            transports,
            apps,
            services,
            metrics,
            failed_hosts,
            python_services,
            power,
            frames_out: Vec::new(),
            open_ended: false,
            balance,
            slots,
            started: false,
            finished: false,
            stall: stall::StallGuard::default(),
        })
    }

    /// Adds a user's service (`services::user::ServiceCode`) under `id`, before the run
    /// starts. On a torus it gets a queue of its own at every server, with the limit and
    /// drop policy of the transport's.
    pub fn add_service(
        &mut self,
        id: u16,
        code: Box<dyn crate::services::user::ServiceCode>,
    ) -> Result<(), String> {
        if self.started {
            return Err("services are added before the run starts".into());
        }
        self.services.add(id, code)?;
        self.net.add_service_queue(id);
        Ok(())
    }
}
