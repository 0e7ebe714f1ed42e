//! The network of one job's run on podman (docs/security.md, "Networks").
//!
//! Every run of a job gets a bridge network of its own, created with
//! netavark's `isolate` option, so a job reaches no other job's container
//! (published ports excepted) and the host only at addresses its services
//! listen on beyond loopback. Before the job's program starts, the
//! container's network namespace gets a `prohibit` route to each blocked
//! network (the cloud metadata address by default): the container has no
//! `NET_ADMIN` to remove it, and a connection there fails at once.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ContainerSteps;

/// What a run's network is and what it may not reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobNetwork {
    /// `jobdeck-<job>-run<run>`, as the run's pod.
    pub name: String,
    /// The job's label (`jobdeck.job=<id>`), by which a delete finds it.
    pub label: String,
    /// Networks the job may not reach: `executor.local.blocked_networks`
    /// and the pool, of which the run's own `/24` stays reachable (its
    /// route is the more specific).
    pub blocked: Vec<String>,
    /// `executor.local.network_pool`, which the network's subnet is taken
    /// from.
    #[serde(default)]
    pub pool: String,
    /// The file whose lock a worker's supervisor holds while it creates the
    /// network (and pod, and its container) or removes them: the same file
    /// as the pod's.
    pub lock: PathBuf,
}

/// Where the tools that change a network namespace are: called by absolute
/// path, so the server's `PATH` cannot choose them.
const NSENTER: &str = "/usr/bin/nsenter";
const IP: &str = "/usr/sbin/ip";

impl ContainerSteps {
    /// Succeeds when the run's network exists.
    pub fn network_exists(&self, network: &JobNetwork) -> Vec<String> {
        self.command(&["network", "exists", &network.name])
    }

    /// The subnets of every network the engine has, space-separated.
    pub fn network_subnets(&self) -> Vec<String> {
        self.command(&["network", "ls", "--format", "{{range .Subnets}}{{.Subnet}} {{end}}"])
    }

    /// Creates the run's network on `subnet`, isolated from every other
    /// network, without the engine's DNS server: a run's workers share a
    /// pod and meet at 127.0.0.1, so names on the network serve nothing, and
    /// `aardvark-dns` would be one more process that every run's setup and
    /// teardown waits on and every job can reach at its gateway.
    /// Containers resolve other names with the host's resolvers.
    pub fn create_network(&self, network: &JobNetwork, subnet: &str) -> Vec<String> {
        self.command(&[
            "network",
            "create",
            "--disable-dns",
            "--subnet",
            subnet,
            "--opt",
            "isolate=true",
            "--label",
            &network.label,
            &network.name,
        ])
    }

    /// The file a supervisor locks while it picks a subnet and creates a
    /// network on it, so two runs never pick the same one.
    pub fn network_pool_lock(&self, network: &JobNetwork) -> PathBuf {
        network.lock.with_file_name("network-pool.lock")
    }

    /// Removes the run's network; refused while a container is attached,
    /// so the last worker out removes it.
    pub fn remove_network(&self, network: &JobNetwork) -> Vec<String> {
        self.command(&["network", "rm", &network.name])
    }

    /// Sets the created container up (its network namespace included)
    /// without starting its program.
    pub fn init(&self) -> Vec<String> {
        self.command(&["init", &self.name])
    }

    /// The path of the initialised container's network namespace.
    pub fn network_namespace(&self) -> Vec<String> {
        self.command(&["inspect", "--format", "{{.NetworkSettings.SandboxKey}}", &self.name])
    }

    /// Makes `blocked` unreachable inside the namespace at `namespace`. A
    /// rootless engine's namespace belongs to its user namespace, which
    /// `podman unshare` enters first.
    pub fn block_route(&self, namespace: &str, blocked: &str, rootless: bool) -> Vec<String> {
        let mut command = if rootless { self.command(&["unshare"]) } else { Vec::new() };
        command.extend(
            [NSENTER, &format!("--net={namespace}"), IP, "route", "replace", "prohibit", blocked].map(String::from),
        );
        command
    }
}
