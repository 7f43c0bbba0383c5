//! What the layers above may read of the network, and the few things they may set before a
//! run. The network's fields are its own: the layers above see them through these, and
//! change the network only through its methods (sending, delivering, failing, building).

use super::*;

impl Network {
    /// The packets of the run (every layer's, allocated here and freed where they end).
    #[inline]
    pub fn pool(&self) -> &PacketPool {
        &self.pool
    }

    #[inline]
    pub fn pool_mut(&mut self) -> &mut PacketPool {
        &mut self.pool
    }

    #[inline]
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node_names(&self) -> &[String] {
        &self.node_names
    }

    #[inline]
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }

    /// The distinct technologies of this network's links.
    pub fn techs(&self) -> &[LinkTech] {
        &self.techs
    }

    /// The technology of each host's first port (index into `techs`).
    pub fn host_tech(&self) -> &[u8] {
        &self.host_tech
    }

    /// The technology of each port's link (index into `techs`).
    pub fn port_tech(&self) -> &[u8] {
        &self.port_tech
    }

    /// Shortest-path forwarding of torus servers (None without a torus).
    pub fn torus(&self) -> Option<&routing::torus::TorusRouting> {
        self.torus.as_ref()
    }

    /// Key-based routing on a torus: views of failures, keys, detection (None elsewhere).
    pub fn kbr(&self) -> Option<&kbr::Kbr> {
        self.kbr.as_ref()
    }

    /// Hosts from this index on are outside the torus (u32::MAX without a torus).
    pub fn torus_servers(&self) -> u32 {
        self.torus_servers
    }

    /// Per-service queues of torus servers (None: one queue per link).
    pub fn service_queues(&self) -> Option<&service_queues::ServiceQueues> {
        self.service_queues.as_ref()
    }

    /// Per-service queues at every torus server, of `specs` (None: one queue per link).
    pub fn install_service_queues(&mut self, specs: Option<Vec<service_queues::QueueSpec>>) {
        let hosts = self.n_hosts();
        self.service_queues = specs.map(|s| service_queues::ServiceQueues::new(hosts, s));
    }

    /// A queue of its own at every torus server for service `id` (with the limit and drop
    /// policy of the transport's), for a service added before the run.
    pub fn add_service_queue(&mut self, id: u16) {
        if let Some(sq) = self.service_queues.as_mut() {
            let spec = sq.specs[0];
            sq.grow(usize::from(id) + 1, spec);
        }
    }

    pub fn schemes(&self) -> &[Scheme] {
        &self.schemes
    }

    pub fn switches(&self) -> &[Switch] {
        &self.switches
    }

    /// Host index to node index.
    #[inline]
    pub fn host_nodes(&self) -> &[u32] {
        &self.host_nodes
    }

    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    pub fn counters(&self) -> &NetCounters {
        &self.counters
    }

    /// A layer above put a packet it made into the network (a host's, not a switch's).
    #[inline]
    pub fn count_sent(&mut self) {
        self.counters.sent += 1;
    }

    /// A layer above consumed a packet it received (and freed or kept it itself).
    #[inline]
    pub fn count_delivered(&mut self) {
        self.counters.delivered += 1;
    }

    pub fn drop_log(&self) -> &[DropRecord] {
        &self.drop_log
    }

    pub fn captures(&self) -> &capture::Captures {
        &self.captures
    }

    pub fn captures_mut(&mut self) -> &mut capture::Captures {
        &mut self.captures
    }

    pub fn queue_trace(&self) -> &capture::QueueTrace {
        &self.queue_trace
    }

    pub fn queue_trace_mut(&mut self) -> &mut capture::QueueTrace {
        &mut self.queue_trace
    }

    /// Tests: every port an event touches must belong to the partition it acts on.
    pub fn set_check_partitions(&mut self, on: bool) {
        self.check_partitions = on;
    }

    #[inline]
    pub fn check_partitions(&self) -> bool {
        self.check_partitions
    }

    /// Note the TCP data segments that leave host NICs (`nic_departures`), for a transport
    /// that holds senders back until their segments have left (TCP small queues).
    pub fn track_nic_departures(&mut self, on: bool) {
        self.track_nic_departures = on;
    }

    /// TCP data segments that left a host NIC since the transport last took them:
    /// (connection, frame bytes).
    #[inline]
    pub fn nic_departures(&mut self) -> &mut Vec<(u32, u32)> {
        &mut self.nic_departures
    }

    #[inline]
    pub fn has_nic_departures(&self) -> bool {
        !self.nic_departures.is_empty()
    }

    /// Torus servers pack waiting packets into one frame per link, framed as `tech`'s;
    /// with `record_departures`, packets that leave hosts are noted (`frames_out`) for
    /// the host layer to charge their sending work.
    pub fn pack_frames(&mut self, tech: LinkTech, record_departures: bool) {
        self.pack = Some(Pack {
            header_bytes: tech.header_bytes,
            mtu_bytes: tech.mtu_bytes,
        });
        self.record_departures = record_departures;
    }

    /// Packets that left hosts' ports since the host layer last looked (packing).
    #[inline]
    pub fn frames_out(&mut self) -> &mut Vec<Departure> {
        &mut self.frames_out
    }

    #[inline]
    pub fn has_frames_out(&self) -> bool {
        !self.frames_out.is_empty()
    }
}
