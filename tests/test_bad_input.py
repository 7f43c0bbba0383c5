"""Malformed scenarios: each gives exit status 2 and one line naming the field."""

import subprocess
import sys

import pytest

BASE = """
name = "bad"
duration = "10ms"
[topology]
kind = "single_switch"
hosts = 4
[workload]
kind = "incast"
senders = 2
"""

TORUS = """
name = "bad-torus"
duration = "1ms"
[topology]
kind = "torus3d"
dims = [3, 3, 3]
[transport]
kind = "udp"
[workload]
kind = "udp"
destination = "random"
load = 0.5
"""

PCIE = BASE.replace("hosts = 4", 'hosts = 4\nlink = { technology = "pcie_gen2" }')


def job_text(params: str) -> str:
    """A job on the four hosts of BASE with these `[workload]` parameters."""
    return BASE.replace('kind = "incast"\nsenders = 2', 'kind = "job"\n' + params)


def mapreduce_text(params: str, storage: bool = True) -> str:
    """A MapReduce job on the four hosts of BASE (with Fusion-IO) with these parameters."""
    text = BASE.replace('kind = "incast"\nsenders = 2', 'kind = "mapreduce"\n' + params)
    return text + ('[host]\nstorage = "fusion_io"\n' if storage else "")


# (what is wrong, TOML text or --set overrides, field the message must name)
CASES = [
    ("unknown top-level key", BASE + "colour = 3\n", "colour"),
    ("unknown key in a section", BASE.replace("hosts = 4", "hosts = 4\nhostz = 5"), "hostz"),
    ("wrong type", BASE.replace("hosts = 4", 'hosts = "four"'), "topology.hosts"),
    ("negative link rate", BASE.replace("hosts = 4", 'hosts = 4\nlink = { rate = "-1Gbps" }'), "topology.link.rate"),
    ("rate without unit", BASE.replace("hosts = 4", 'hosts = 4\nlink = { rate = 10 }'), "topology.link.rate"),
    ("bad duration unit", BASE.replace('duration = "10ms"', 'duration = "10 minutes"'), "duration"),
    ("zero duration", BASE.replace('duration = "10ms"', 'duration = "0s"'), "duration"),
    ("zero buffer", BASE + '[switch]\nbuffer_per_port = "0B"\n', "switch.buffer_per_port"),
    ("odd k", BASE.replace('kind = "single_switch"\nhosts = 4', 'kind = "fat_tree"\nk = 5'), "topology.k"),
    ("unknown topology", BASE.replace('kind = "single_switch"', 'kind = "torus"'), "topology.kind"),
    ("key of another topology kind", BASE.replace("hosts = 4", "hosts = 4\nk = 4"), "topology.k"),
    ("too many senders", BASE.replace("senders = 2", "senders = 10"), "workload.senders"),
    ("unknown workload", BASE.replace('kind = "incast"', 'kind = "hadoop"'), "workload.kind"),
    ("negative load", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "flows"\nload = -0.5'), "workload.load"),
    ("missing CDF file", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "flows"\nsize_cdf = "/nonexistent/sizes.csv"'), "workload.size_cdf"),
    ("unknown transport variant", BASE + '[transport]\nvariant = "vegas"\n', "transport.variant"),
    ("zero RTO floor", BASE + '[transport]\nrto_min = "0ms"\n', "transport.rto_min"),
    ("tiny MSS", BASE + "[transport]\nmss = 10\n", "transport.mss"),
    ("unknown forwarding", BASE + '[switch]\nforwarding = "wormhole"\n', "switch.forwarding"),
    ("unknown scheme", BASE + '[switch]\nscheme = "codel"\n', "switch.scheme"),
    ("bad diablo preset", BASE.replace('kind = "single_switch"\nhosts = 4', 'kind = "diablo_array"\nracks = 2\npreset = "40g"'), "topology.preset"),
    ("missing edge-list file", BASE.replace('kind = "single_switch"\nhosts = 4', 'kind = "edge_list"\nfile = "/nonexistent.edges"'), "topology.file"),
    ("sweep value not a list", BASE + '[sweep]\n"workload.senders" = 3\n', 'sweep."workload.senders"'),
    ("bad value inside a sweep", BASE + '[sweep]\n"workload.senders" = [1, 99]\n', "workload.senders"),
    ("udp transport with incast", BASE + '[transport]\nkind = "udp"\n', "transport.kind"),
    ("shared buffer alpha", BASE + '[switch]\nbuffer = "shared"\ndt_alpha = 0\n', "switch.dt_alpha"),
    ("PFC without a shared buffer", BASE + '[switch]\npfc = {}\n', "switch.buffer"),
    ("PFC priority out of range", BASE + '[switch]\nbuffer = "shared"\npfc = { priorities = [9] }\n', "switch.pfc.priorities"),
    ("PFC with an unknown key", BASE + '[switch]\nbuffer = "shared"\npfc = { xoff = "10KiB" }\n', "switch.pfc"),
    ("PFC over a scheme that reorders", BASE + '[switch]\nbuffer = "shared"\nscheme = "pfabric"\npfc = {}\n', "switch.scheme"),
    ("PFC in timeslots", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "udp"\nrate = "1Gbps"\ndestination = 0') + '[transport]\nkind = "udp"\n[engine]\nmode = "timeslots"\n[switch]\nbuffer = "shared"\npfc = {}\n', "switch.pfc"),
    ("PFC headroom larger than the buffer", BASE + '[switch]\nbuffer = "shared"\nshared_buffer = "20KiB"\npfc = {}\n', "switch.shared_buffer"),
    ("not TOML at all", "this is = = not toml", "scenario"),
    ("udp faster than the wire carries", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "udp"\nrate = "10Gbps"'), "workload.rate"),
    ("flow servers equal to the only client", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "flows"\nclients = [1]\nservers = [1]'), "workload.servers"),
    ("too many hosts", BASE.replace("hosts = 4", "hosts = 200000"), "topology.hosts"),
    ("udp destination neither a host nor random", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "udp"\nrate = "1Gbps"\ndestination = "anywhere"'), "workload.destination"),
    ("random destination outside udp", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "many_to_one"\ndestination = "random"'), "workload.destination"),
    ("CPU of 0 GHz", BASE + '[host]\nstack = "linux_2_6_39"\nclock_ghz = 0\n', "host.clock_ghz"),
    ("negative host cost", BASE + '[host]\nstack = "linux_3_5"\ncosts = { rx_packet = -5 }\n', "host.costs.rx_packet"),
    ("noise on hosts that cost nothing", BASE + '[host]\nnoise = { tick_hz = 250 }\n', "host.noise.enabled"),
    ("tick longer than half its period", BASE + '[host]\nstack = "linux_3_5"\nnoise = { tick_hz = 1000, tick = "600us" }\n', "host.noise.tick"),
    ("negative burst rate", BASE + '[host]\nstack = "linux_3_5"\nnoise = { daemon_per_s = -1 }\n', "host.noise.daemon_per_s"),
    ("bursts of no length", BASE + '[host]\nstack = "linux_3_5"\nnoise = { softirq_median = "0us" }\n', "host.noise.softirq_median"),
    ("a tick that takes nothing", BASE + '[host]\nstack = "linux_3_5"\nnoise = { tick = "0us" }\n', "host.noise.tick"),
    ("a tick rate below one a second", BASE + '[host]\nstack = "linux_3_5"\nnoise = { tick_hz = 0.001 }\n', "host.noise.tick_hz"),
    ("bursts that fill the core", BASE + '[host]\nstack = "linux_3_5"\nnoise = { daemon_per_s = 1000 }\n', "host.noise.daemon_per_s"),
    ("unknown noise key", BASE + '[host]\nstack = "linux_3_5"\nnoise = { jitter = 1 }\n', "jitter"),
    ("unknown TCP rules", BASE + '[transport]\nrules = "linux_4_19"\n', "transport.rules"),
    ("unknown recovery", BASE + '[transport]\nrecovery = "fast"\n', "transport.recovery"),
    ("unknown timeout formula", BASE + '[transport]\nrto_formula = "bsd"\n', "transport.rto_formula"),
    ("initial RTO under the floor", BASE + '[transport]\ninitial_rto = "1ms"\n', "transport.initial_rto"),
    ("unknown host stack", BASE + '[host]\nstack = "windows_nt"\n', "host.stack"),
    ("unknown io model", BASE + '[host]\nio_model = "io_uring"\n', "host.io_model"),
    ("unknown thread model", BASE + '[host]\nthreads = "per_core"\n', "host.threads"),
    ("unknown interrupt moderation", BASE + '[host]\nstack = "linux_3_5"\ninterrupt_moderation = "napi"\n', "host.interrupt_moderation"),
    ("adaptive moderation with a fixed delay", BASE + '[host]\nstack = "linux_3_5"\ninterrupt_moderation = "adaptive"\nrx_coalesce = "20us"\n', "host.rx_coalesce"),
    ("adaptive moderation on ideal hosts", BASE + '[host]\ninterrupt_moderation = "adaptive"\n', "host.interrupt_moderation"),
    ("unknown idle states", BASE + '[host]\nstack = "linux_3_5"\nidle_states = "haswell"\n', "host.idle_states"),
    ("idle states on ideal hosts", BASE + '[host]\nidle_states = "ivytown"\n', "host.idle_states"),
    ("adaptive moderation on a polling stack", BASE + '[host]\nstack = "user_space"\ninterrupt_moderation = "adaptive"\n', "host.interrupt_moderation"),
    ("zero cores", BASE + '[host]\ncores = 0\n', "host.cores"),
    ("unknown host cost", BASE + '[host]\ncosts = { page_fault = 3 }\n', "page_fault"),
    ("more memcached servers than hosts", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\nserver_count = 4'), "workload.server_count"),
    ("unknown memcached version", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\nversion = "2.0"'), "workload.version"),
    ("zero memcached gap scale", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\ngap_scale = 0'), "workload.gap_scale"),
    ("RACK without SACK", BASE.replace('[workload]', '[transport]\nsack = false\nrack = true\n\n[workload]'), "transport.rack"),
    ("tail loss probes without SACK", BASE.replace('[workload]', '[transport]\nsack = false\ntlp = true\n\n[workload]'), "transport.tlp"),
    ("zero requests per connection", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\nrequests_per_connection = 0'), "workload.requests_per_connection"),
    ("an override with neither scheme nor buffer", BASE + '[[switch.overrides]]\ntiers = [0]\n', "switch.overrides[0]"),
    ("an override's buffer below a frame", BASE + '[[switch.overrides]]\ntiers = [0]\nbuffer_per_port = "100B"\n', "switch.overrides[0].buffer_per_port"),
    ("an override's buffer with a shared buffer", BASE + '[switch]\nbuffer = "shared"\n[[switch.overrides]]\ntiers = [0]\nbuffer_per_port = "64KB"\n', "switch.overrides[0].buffer_per_port"),
    ("closed-loop clients over UDP", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\nclosed_loop = true').replace('[workload]', '[transport]\nkind = "udp"\n\n[workload]'), "workload.closed_loop"),
    ("closed loop as a string", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\nclosed_loop = "yes"'), "closed_loop"),
    ("reconnecting over UDP", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "memcached"\nrequests_per_connection = 1').replace('[workload]', '[transport]\nkind = "udp"\n\n[workload]'), "workload.requests_per_connection"),
    ("negative seed", BASE.replace('name = "bad"', 'name = "bad"\nseed = -4'), "seed"),
    ("nan load", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "flows"\nload = nan'), "workload.load"),
    ("-inf load", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "flows"\nload = -inf'), "workload.load"),
    ("a TOML date", BASE.replace('duration = "10ms"', "duration = 1979-05-27"), "duration"),
    ("a TOML date-time in a table", BASE.replace("hosts = 4", "hosts = 1979-05-27T07:32:00Z"), "topology.hosts"),
    ("name that is a number", BASE.replace('name = "bad"', "name = 2024"), "name"),
    ("switch as a list", BASE + "switch = []\n", "switch"),
    ("sweep as a list", BASE + "sweep = []\n", "sweep"),
    ("sweep over a path named case", BASE + "[sweep]\ncase = [1]\n", "case"),
    ("arrays nested 1,000 deep", BASE.replace("hosts = 4", "hosts = " + "[" * 1000 + "]" * 1000), "scenario"),
    ("torus dims of two sizes", TORUS.replace("dims = [3, 3, 3]", "dims = [3, 3]"), "topology.dims"),
    ("torus dims of four sizes", TORUS.replace("dims = [3, 3, 3]", "dims = [3, 3, 3, 3]"), "topology.dims"),
    ("torus dim of 0", TORUS.replace("dims = [3, 3, 3]", "dims = [3, 0, 3]"), "topology.dims"),
    ("torus dim above 64", TORUS.replace("dims = [3, 3, 3]", "dims = [65, 1, 1]"), "topology.dims"),
    ("torus of one server", TORUS.replace("dims = [3, 3, 3]", "dims = [1, 1, 1]"), "topology.dims"),
    ("unknown link technology", TORUS.replace("dims = [3, 3, 3]", 'dims = [3, 3, 3]\nlink = { technology = "token_ring" }'), "topology.link.technology"),
    ("rate other than the technology's", TORUS.replace("dims = [3, 3, 3]", 'dims = [3, 3, 3]\nlink = { rate = "10Gbps" }'), "topology.link.rate"),
    ("udp load on a fat tree", TORUS.replace('kind = "torus3d"\ndims = [3, 3, 3]', 'kind = "fat_tree"'), "workload.load"),
    ("udp load and rate", TORUS.replace("load = 0.5", 'load = 0.5\nrate = "1Gbps"'), "workload.load"),
    ("udp load to one host", TORUS.replace('destination = "random"', "destination = 0"), "workload.destination"),
    ("failure of a link that does not exist", TORUS + '[[failures]]\nlink = ["h0", "h13"]\nat = "1ms"\n', "failures[0].link"),
    ("failure of both a link and a node", TORUS + '[[failures]]\nlink = ["h0", "h1"]\nnode = "h2"\nat = "1ms"\n', "failures[0]"),
    ("failure of an unknown node", TORUS + '[[failures]]\nnode = "h999"\nat = "1ms"\n', "failures[0].node"),
    ("failure of all the servers", TORUS + '[[failures]]\nrandom_nodes = 1.0\nat = "1ms"\n', "failures[0].random_nodes"),
    ("failure that ends before it starts", TORUS + '[[failures]]\nlink = ["h0", "h1"]\nat = "0.5ms"\nuntil = "0.2ms"\n', "failures[0].until"),
    ("churn at rate 0", TORUS + "[churn]\nrate = 0\n", "churn.rate"),
    ("churn with every server down", TORUS + "[churn]\nrate = 4\ndown_fraction = 1.5\n", "churn.down_fraction"),
    ("churn on a fat tree", BASE + "[churn]\nrate = 4\n", "churn"),
    ("keepalives never missed", TORUS + "[failure_detection]\nmisses = 0\n", "failure_detection.misses"),
    ("detection by a psychic", TORUS + '[failure_detection]\nmode = "psychic"\n', "failure_detection.mode"),
    ("runtime queues of an unknown kind", TORUS + '[runtime]\nqueues = "per_flow"\n', "runtime.queues"),
    ("packing without per-service queues", TORUS + '[runtime]\nqueues = "per_link"\npack = true\n', "runtime.pack"),
    ("packing that is not a boolean", TORUS + '[runtime]\npack = "yes"\n', "runtime.pack"),
    ("weight for an unknown service", TORUS + "[runtime]\nweights = { pong = 2 }\n", "runtime.weights"),
    ("reachable destinations on a switch", TORUS.replace('kind = "torus3d"\ndims = [3, 3, 3]', 'kind = "single_switch"\nhosts = 4').replace("load = 0.5", 'rate = "1Mbps"').replace('destination = "random"', 'destination = "random_reachable"'), "workload.destination"),
    ("keys on a switch", TORUS.replace('kind = "torus3d"\ndims = [3, 3, 3]', 'kind = "single_switch"\nhosts = 4').replace("load = 0.5", 'rate = "1Mbps"').replace('destination = "random"', 'destination = "random_key"'), "workload.destination"),
    ("reliable transfer to a key on a switch", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "reliable"\ndestination = "key"'), "workload.destination"),
    ("reliable window of 0", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "reliable"\nwindow = 0').replace('[transport]\nkind = "udp"\n', ""), "workload.window"),
    ("multicast on a switch", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "multicast"'), "workload.kind"),
    ("multicast paced at nothing", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "multicast"\nrate_fraction = 0').replace('[transport]\nkind = "udp"\n', ""), "workload.rate_fraction"),
    ("key-value store on a switch without store_dims", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "kv"'), "workload.kind"),
    ("key-value store_dims on a torus", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "kv"\nstore_dims = [3, 3, 3]').replace('[transport]\nkind = "udp"\n', ""), "workload.store_dims"),
    ("key-value store_dims with no hosts left over", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "kv"\nstore_dims = [2, 2, 1]'), "workload.store_dims"),
    ("key-value operation of an unknown kind", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "kv"\nmix = { upsert = 1 }').replace('[transport]\nkind = "udp"\n', ""), "workload.mix"),
    ("key-value store with no replicas", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "kv"\nreplicas = 0').replace('[transport]\nkind = "udp"\n', ""), "workload.replicas"),
    ("key-value store on a floppy disk", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "kv"\ndisk = "floppy"').replace('[transport]\nkind = "udp"\n', ""), "workload.disk"),
    ("key-value clients of both kinds", TORUS.replace("dims = [3, 3, 3]", "dims = [3, 3, 3]\nload_generators = 2").replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "kv"\nclients = [0, 27]').replace('[transport]\nkind = "udp"\n', ""), "workload.clients"),
    ("load generators for UDP", TORUS.replace("dims = [3, 3, 3]", "dims = [3, 3, 3]\nload_generators = 2"), "topology.load_generators"),
    ("negative load generators", TORUS.replace("dims = [3, 3, 3]", "dims = [3, 3, 3]\nload_generators = -1"), "topology.load_generators"),
    ("tunnel that never lets go", TORUS + '[runtime]\nreorder_hold = "0s"\n', "runtime.reorder_hold"),
    ("aggregation on a switch", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "aggregate"'), "workload.kind"),
    ("aggregation to a server that is not there", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "aggregate"\nroot = 27').replace('[transport]\nkind = "udp"\n', ""), "workload.root"),
    ("aggregation paced beyond its links", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "aggregate"\nrate_fraction = 1.5').replace('[transport]\nkind = "udp"\n', ""), "workload.rate_fraction"),
    ("key-value cache on a switch", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "kv"\nstore_dims = [1, 1, 3]\ncache = true'), "workload.cache"),
    ("ping to itself", TORUS.replace('kind = "udp"\ndestination = "random"\nload = 0.5', 'kind = "ping"\nsource = 2\ndestinations = [1, 2]').replace('[transport]\nkind = "udp"\n', ""), "workload.destinations[1]"),
    ("negative NIC power", BASE + "[power]\nnic_w = -2\n", "power.nic_w"),
    ("power in milliwatts", BASE + "[power]\ncpu_core_w = 9000000\n", "power.cpu_core_w"),
    ("idle power above the maximum", BASE + "[power]\nidle_fraction = 1.5\n", "power.idle_fraction"),
    ("unknown power component", BASE + "[power]\ngpu_w = 300\n", "gpu_w"),
    ("storage power without a device", BASE + "[power]\nstorage_w = 6\n", "power.storage_w"),
    ("unknown storage device", BASE + '[host]\nstorage = "floppy"\n', "host.storage"),
    ("PCIe link of three lanes", BASE.replace("hosts = 4", 'hosts = 4\nlink = { technology = "pcie_gen2", lanes = 3 }'), "topology.link.lanes"),
    ("lanes on an Ethernet link", BASE.replace("hosts = 4", 'hosts = 4\nlink = { technology = "10gbe", lanes = 4 }'), "topology.link.lanes"),
    ("lanes against the technology's width", BASE.replace("hosts = 4", 'hosts = 4\nlink = { technology = "pcie_gen2_x8", lanes = 4 }'), "topology.link.lanes"),
    ("job without phases", job_text('nodes = [0, 1]'), "workload.phases"),
    ("job phase of an unknown kind", job_text('phases = [{ kind = "sleep", bytes = "1MB" }]'), "workload.phases[0].kind"),
    ("job phase without bytes", job_text('phases = [{ kind = "shuffle" }]'), "workload.phases[0].bytes"),
    ("compute phase of no cycles", job_text('phases = [{ kind = "compute", bytes = "1MB", cycles_per_byte = 0 }]'), "workload.phases[0].cycles_per_byte"),
    ("compute phase more than parallel", job_text('phases = [{ kind = "compute", bytes = "1MB", cycles_per_byte = 5, parallel_fraction = 2 }]'), "workload.phases[0].parallel_fraction"),
    ("cycles for a shuffle", job_text('phases = [{ kind = "shuffle", bytes = "1MB", cycles_per_byte = 5 }]'), "workload.phases[0].cycles_per_byte"),
    ("shuffle of an unknown pattern", job_text('phases = [{ kind = "shuffle", bytes = "1MB", pattern = "ring" }]'), "workload.phases[0].pattern"),
    ("reduce to a node not in the job", job_text('nodes = [0, 1]\nphases = [{ kind = "shuffle", bytes = "1MB", pattern = "to_one", root = 2 }]'), "workload.phases[0].root"),
    ("storage phase without storage", job_text('phases = [{ kind = "read", bytes = "1MB" }]'), "workload.phases[0].kind"),
    ("first phase overlapping nothing", job_text('phases = [{ kind = "shuffle", bytes = "1MB", overlap = true }]'), "workload.phases[0].overlap"),
    ("two shuffles at once", job_text('phases = [{ kind = "shuffle", bytes = "1MB" }, { kind = "shuffle", bytes = "1MB", overlap = true }]'), "workload.phases[1].overlap"),
    ("job node twice", job_text('nodes = [1, 1]\nphases = [{ kind = "shuffle", bytes = "1MB" }]'), "workload.nodes[1]"),
    ("job node out of range", job_text('nodes = [0, 9]\nphases = [{ kind = "shuffle", bytes = "1MB" }]'), "workload.nodes[1]"),
    ("no DMA windows", BASE + "[dma]\nwindows = 0\n", "dma.windows"),
    ("odd read request", BASE + '[dma]\nread_request = "500B"\n', "dma.read_request"),
    ("remap of an hour", BASE + '[dma]\nremap = "1h"\n', "dma.remap"),
    ("unknown DMA key", BASE + "[dma]\nlanes = 4\n", "lanes"),
    ("DMA op of another kind", PCIE.replace('kind = "incast"\nsenders = 2', 'kind = "dma"\nop = "copy"'), "workload.op"),
    ("DMA to itself", PCIE.replace('kind = "incast"\nsenders = 2', 'kind = "dma"\ninitiator = 1\npeers = [1]'), "workload.peers[0]"),
    ("DMA over Ethernet", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "dma"'), "workload.kind"),
    ("shuffle by DMA over Ethernet", job_text('phases = [{ kind = "shuffle", bytes = "1MB", via = "dma" }]'), "workload.phases[0].via"),
    ("lateness bound of zero", BASE + '[emulation]\nlateness_bound = "0s"\n', "emulation.lateness_bound"),
    ("late fraction above one", BASE + "[emulation]\nlate_fraction_bound = 2\n", "emulation.late_fraction_bound"),
    ("spin of a second", BASE + '[emulation]\nspin = "1s"\n', "emulation.spin"),
    ("program on no host", BASE + '[[emulation.apps]]\nhosts = []\ncommand = "true"\n', "emulation.apps[0].hosts"),
    ("program without a command", BASE + '[[emulation.apps]]\nhosts = [0]\ncommand = " "\n', "emulation.apps[0].command"),
    ("program starting after the end", BASE + '[[emulation.apps]]\nhosts = [0]\ncommand = "true"\nstart = "1s"\n', "emulation.apps[0].start"),
    ("setting outside the network's", BASE + '[[emulation.sysctls]]\nsettings = { "kernel.panic" = 1 }\n', "emulation.sysctls[0].settings"),
    ("capture of no such host", BASE + "[emulation]\ncapture = [4]\n", "emulation.capture[0]"),
    ("unknown switch model", BASE + '[switch]\nmodel = "catalyst"\n', "switch.model"),
    ("mapreduce without storage", mapreduce_text("", storage=False), "workload.kind"),
    ("mapreduce of no data", mapreduce_text('data = "0B"'), "workload.data"),
    ("HDFS block below 1 KiB", mapreduce_text('block = "100B"'), "workload.block"),
    ("splits by the million", mapreduce_text('data = "1GB"\nsplit = "2KiB"'), "workload.split"),
    ("no map slots", mapreduce_text("map_slots = 0"), "workload.map_slots"),
    ("reduces by the thousand", mapreduce_text('reduces = 2000'), "workload.reduces"),
    ("segments by the billion", mapreduce_text('data = "100GB"\nsplit = "1MB"\nreduces = 1000'), "workload.reduces"),
    ("negative map cost", mapreduce_text("map_cycles_per_byte = -1"), "workload.map_cycles_per_byte"),
    ("task start-up of a day", mapreduce_text('task_startup = "86400s"'), "workload.task_startup"),
    ("mapreduce shuffle by DMA over Ethernet", mapreduce_text('via = "dma"'), "workload.via"),
    ("mapreduce node twice", mapreduce_text("nodes = [2, 2]"), "workload.nodes[1]"),
    ("shuffle by carrier pigeon", job_text('phases = [{ kind = "shuffle", bytes = "1MB", via = "pigeon" }]'), "workload.phases[0].via"),
    ("chassis of one switch too many", BASE.replace('kind = "single_switch"\nhosts = 4', 'kind = "chassis"\nswitches = 5'), "topology.switches"),
    ("RAMCloud write of nothing", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "ramcloud"\nop = "write"\nsize = "0B"'), "workload.size"),
    ("RAMCloud master as its own client", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "ramcloud"\nmaster = 0'), "workload.master"),
    ("RAMCloud over carrier pigeon", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "ramcloud"\ntransport = "pigeon"'), "workload.transport"),
    ("RAMCloud acknowledging after the window", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "ramcloud"\nwindow = 4\nack_after = 5'), "workload.ack_after"),
    ("RAMCloud replicas over TCP", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "ramcloud"\ntransport = "tcp"\nreplicas = 1'), "workload.replicas"),
    ("more RAMCloud replicas than hosts", BASE.replace('kind = "incast"\nsenders = 2', 'kind = "ramcloud"\nreplicas = 3'), "workload.replicas"),
    ("a million-point sweep", BASE + '[sweep]\n"workload.senders" = ' + str(list(range(1000))) + '\n"workload.block" = ' + str(list(range(1000, 2000))) + "\n", "sweep"),
]


def wscsim(*args):
    return subprocess.run([sys.executable, "-m", "wscsim.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("what,text,field", CASES, ids=[c[0] for c in CASES])
def test_bad_scenario_is_refused_with_the_field_named(tmp_path, what, text, field):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    for cmd in ("check", "run"):
        p = wscsim(cmd, str(f), "--out", str(tmp_path / "out")) if cmd == "run" else wscsim(cmd, str(f))
        assert p.returncode == 2, (what, cmd, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert "Traceback" not in p.stderr and "panicked" not in p.stderr
        assert field in lines[0], (field, lines[0])
    assert not (tmp_path / "out").exists()


def test_bad_topology_files(tmp_path):
    cases = {
        "disconnected": ("switch s\nswitch t\nhost a\nhost b\nlink a s\nlink b t\n", "disconnected"),
        "undeclared node": ("switch s\nhost a\nlink a s\nlink b s\n", "line 4"),
        "host with two links to one switch": ("switch s\nhost a\nhost b\nlink a s\nlink a s\nlink b s\n", "same switch"),
        "host with five NICs": ("".join(f"switch s{i}\nlink a s{i}\n" for i in range(5)).replace("switch s0\n", "switch s0\nhost a\nhost b\nlink b s0\n"), "1 to 4"),
        "bad rate": ("switch s\nhost a\nhost b\nlink a s 10Gbs\nlink b s\n", "line 4"),
    }
    for name, (edges, words) in cases.items():
        e = tmp_path / f"{name}.edges"
        e.write_text(edges)
        f = tmp_path / "t.toml"
        f.write_text(BASE.replace('kind = "single_switch"\nhosts = 4', f'kind = "edge_list"\nfile = "{e}"'))
        p = wscsim("check", str(f))
        assert p.returncode == 2, (name, p.stderr)
        assert "topology.file" in p.stderr and words in p.stderr, (name, p.stderr)


def test_bad_cdf_files(tmp_path):
    for name, text in {"non-monotone": "size_bytes,cdf\n0,0\n100,0.7\n50,0.8\n200,1\n", "does not reach 1": "0,0\n100,0.5\n"}.items():
        c = tmp_path / f"{name}.csv"
        c.write_text(text)
        f = tmp_path / "t.toml"
        f.write_text(BASE.replace('kind = "incast"\nsenders = 2', f'kind = "flows"\nsize_cdf = "{c}"'))
        p = wscsim("check", str(f))
        assert p.returncode == 2 and "workload.size_cdf" in p.stderr, (name, p.stderr)


def test_bad_override_and_missing_scenario(tmp_path):
    p = wscsim("check", "diablo_incast", "--set", "nonsense")
    assert p.returncode == 2 and "--set" in p.stderr
    p = wscsim("check", "no_such_scenario")
    assert p.returncode == 2 and "scenario" in p.stderr
    p = wscsim("check", "diablo_incast", "--set", "switch.buffer_per_port=-4")
    assert p.returncode == 2 and "switch.buffer_per_port" in p.stderr


def test_non_utf8_scenario(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_bytes(b'name = "caf\xe9"\n')
    p = wscsim("check", str(f))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "UTF-8" in p.stderr, p.stderr


def test_serde_messages_read_given_and_allowed():
    p = wscsim("check", "diablo_incast", "--set", "name=2024")
    assert p.returncode == 2 and "name: given integer 2024; allowed: a string" in p.stderr, p.stderr


@pytest.mark.parametrize("args", [["run", "--seed", "x"], ["check", "--bogus"], ["frobnicate", "--now"], ["run", "--workers", "0"]])
def test_command_line_mistakes_are_one_line(args):
    p = wscsim(*args)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


def test_api_refuses_bad_overrides_and_values_with_its_own_error():
    import wscsim

    for kwargs, field in (
        ({"overrides": [5]}, "--set"),
        ({"overrides": {5: 1}}, "overrides"),
        ({"overrides": 7}, "overrides"),
        ({"overrides": {"workload.senders": {1, 2}}}, "workload.senders"),
        ({"overrides": {"workload.block": b"4KB"}}, "workload.block"),
        ({"overrides": {"transport.rto_min": 1j}}, "transport.rto_min"),
        ({"overrides": {"workload.load": float("nan")}}, "workload.load"),
        ({"out": 5}, "out"),
    ):
        with pytest.raises(wscsim.ScenarioError) as e:
            wscsim.run("diablo_incast", **kwargs)
        assert field in str(e.value), (kwargs, str(e.value))
    deep = {"topology": {"kind": "single_switch"}, "workload": {"kind": "incast"}}
    node = deep
    for _ in range(1000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(wscsim.ScenarioError):
        wscsim.run(deep)


def test_huge_size_class_weights_still_mix_sizes():
    import wscsim

    sc = {"name": "classes", "duration": "20ms", "topology": {"kind": "single_switch", "hosts": 4},
          "workload": {"kind": "flows", "flows": 60, "size_classes": [{"size": "1KB", "weight": 1e308}, {"size": "20KB", "weight": 1e308}]}}
    flows = wscsim.run(sc).flows
    assert set(flows["size_bytes"]) == {1000, 20000}
    assert flows["start_us"].nunique() > 30


def test_a_csv_header_after_a_comment(tmp_path):
    c = tmp_path / "sizes.csv"
    c.write_text("# sizes from somewhere\nsize_bytes,cdf\n1000,0\n9000,1\n")
    f = tmp_path / "t.toml"
    f.write_text(BASE.replace('kind = "incast"\nsenders = 2', f'kind = "flows"\nsize_cdf = "{c}"'))
    p = wscsim("check", str(f))
    assert p.returncode == 0, p.stderr


def test_a_sweep_over_tables_runs_and_labels_its_points(tmp_path):
    import pandas as pd

    f = tmp_path / "t.toml"
    f.write_text(BASE.replace('kind = "incast"\nsenders = 2', 'kind = "incast"\nsenders = 2\niterations = 2')
                 + '[sweep]\n"switch.scheme" = ["droptail", { kind = "red", ecn = true }]\n')
    p = subprocess.run([sys.executable, "-m", "wscsim.cli", "run", str(f), "--out", str(tmp_path / "o"), "--no-plots"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    pts = pd.read_parquet(tmp_path / "o" / "points.parquet")
    assert list(pts["scheme"]) == ["droptail", '{"ecn":true,"kind":"red"}']


@pytest.mark.parametrize("destination", ["destination = 0", ""])
def test_udp_load_without_all_to_all_destination_quotes_the_given_value(tmp_path, destination):
    f = tmp_path / "bad.toml"
    f.write_text(TORUS.replace('destination = "random"', destination))
    p = wscsim("check", str(f))
    assert p.returncode == 2 and "workload.destination" in p.stderr, p.stderr
    assert "Some(" not in p.stderr and "None" not in p.stderr, p.stderr


def test_emulate_without_root_says_what_is_missing_in_one_line(tmp_path, monkeypatch, capsys):
    """The privilege check comes before anything is made (the check is stubbed to see a
    user that is not root, so this runs anywhere)."""
    import os

    from wscsim import cli

    sc = tmp_path / "sc.toml"
    sc.write_text(BASE.replace('kind = "incast"\nsenders = 2', 'kind = "none"'))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)  # keep pytest's handlers
    assert cli.main(["emulate", str(sc)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: emulate needs root") and err.count("\n") == 1


LEAF_SPINE = BASE.replace('kind = "single_switch"\nhosts = 4', 'kind = "leaf_spine"\nleaves = 2\nspines = 1\nhosts_per_leaf = 2')


# Issue 34, item 14: (what is wrong, TOML text, words the one line must hold, words it must not)
WORDING = [
    ("a typo in the base is not blamed on a sweep point", BASE.replace("hosts = 4", "hosts = 4\nhostz = 5") + '[sweep]\n"workload.senders" = [1, 2]\n',
     ["topology.hostz"], ["sweep point"]),
    ("a point's own value is", BASE + '[sweep]\n"workload.senders" = [1, 99]\n', ["workload.senders", "(in sweep point workload.senders=99)"], []),
    ("misspelt kind", BASE.replace('"single_switch"', '"leafspine"'), ['topology.kind', 'did you mean "leaf_spine"?'], []),
    ("kind in capitals", BASE + '[transport]\nvariant = "DCTCP"\n', ['transport.variant', 'did you mean "dctcp"?'], []),
    ("scheme in capitals", BASE + '[switch]\nscheme = "DCTCP"\n', ['switch.scheme.kind', 'did you mean "dctcp"?'], []),
    ("misspelt key of a kind", LEAF_SPINE.replace("hosts_per_leaf", "host_per_leaf"), ["topology.host_per_leaf", "did you mean hosts_per_leaf?"], []),
    ("misspelt key of a section", BASE + '[transport]\nvarient = "cubic"\n', ["transport.varient", "did you mean variant?"], []),
    ("nothing close", BASE.replace('"incast"', '"hadoop"'), ["workload.kind"], ["did you mean"]),
    ("missing topology kind", BASE.replace('kind = "single_switch"\n', ""), ['topology: given no kind; allowed: one of "single_switch", '], ["a value for it"]),
    ("missing workload kind", BASE.replace('kind = "incast"\n', ""), ['workload: given no kind; allowed: one of "incast", '], ["a value for it"]),
    ("missing scheme kind", BASE + "[switch.scheme]\necn = true\n", ['switch.scheme.kind: given no kind; allowed: one of "droptail", '], []),
    ("unquoted sweep key", BASE + "[sweep]\nworkload.senders = [1, 2]\n", ["sweep.workload", '"workload.senders" = [1, 2]'], ["{'"]),
    ("a number for a table", BASE + "[host]\nnoise = 3\n", ["host.noise: given integer 3; allowed: a table"], ["struct", "Cfg"]),
    ("a number for a list", BASE.replace('duration = "10ms"', 'duration = "10ms"\nfailures = 3'), ["failures: given integer 3; allowed: a list"], ["sequence"]),
    ("a number for the overrides list", BASE + "[switch]\noverrides = 3\n", ["switch.overrides"], []),
    ("empty sweep key", BASE + '[sweep]\n"" = [1, 2]\n', ['sweep."": given an empty key'], ["--set"]),
    ("empty part of a sweep key", BASE + '[sweep]\n"workload..senders" = [1, 2]\n', ['sweep."workload..senders": given an empty'], ["--set"]),
    ("a negative seed", BASE.replace('duration = "10ms"', 'duration = "10ms"\nseed = -1'), ["seed: given integer -1; allowed: an integer, 0 or more"], []),
]


@pytest.mark.parametrize("what,text,words,absent", WORDING, ids=[c[0] for c in WORDING])
def test_error_wording(tmp_path, what, text, words, absent):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    p = wscsim("check", str(f))
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    for w in absent:
        assert w not in lines[0], (w, lines[0])


def test_api_seed_and_empty_override_are_blamed_on_themselves():
    import wscsim

    for kwargs, field in (({"seed": float("nan")}, "seed"), ({"seeds": float("inf")}, "seeds"), ({"overrides": {"": 1}}, "overrides")):
        with pytest.raises(wscsim.ScenarioError) as e:
            wscsim.run(BASE_DICT, **kwargs)
        assert e.value.path == field, (kwargs, str(e.value))


BASE_DICT = {"name": "bad", "duration": "10ms", "topology": {"kind": "single_switch", "hosts": 4}, "workload": {"kind": "incast", "senders": 2}}


@pytest.mark.parametrize("data", ['"1TB"', '"1TiB"'])
def test_mapreduce_takes_its_documented_terabyte(tmp_path, data):
    # docs/model-reference.md: data, file, block and split go up to 1 TB.
    f = tmp_path / "mr.toml"
    f.write_text(mapreduce_text(f"data = {data}"))
    p = wscsim("check", str(f))
    if data == '"1TB"':
        assert p.returncode == 0, p.stderr
    else:  # above the range, refused in the range's own words
        assert p.returncode == 2 and "workload.data" in p.stderr and "1000000000000" in p.stderr, p.stderr
