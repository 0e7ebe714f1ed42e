//! The supervisor's side of a run's network on podman
//! (`container::JobNetwork`, docs/security.md "Networks"): the first
//! container of a run creates the network on a `/24` of the pool, every
//! container gets the routes that refuse the blocked networks (the rest of
//! the pool among them) before its program starts, and the last one out
//! removes the network. The caller holds the run's lock around creation and
//! removal.

use std::path::Path;

use super::supervisor::run_step;
use crate::container::ContainerSteps;
use jobdeck_core::config::Ipv4Network;

/// A file's lock, held until dropped. A lock that cannot be taken is not
/// held: the supervisor goes on, as before there was one.
pub(super) struct FileLock {
    _held: Option<std::fs::File>,
}

impl FileLock {
    pub(super) fn take(path: &Path) -> FileLock {
        use std::os::fd::AsRawFd;
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).ok();
        // SAFETY: flock on a descriptor this process owns.
        let file = file.filter(|f| unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0);
        FileLock { _held: file }
    }
}

/// Creates the run's network unless another of its containers did, on the
/// first `/24` of the pool that no network of the engine overlaps. The
/// pool's lock keeps two runs from picking the same one.
pub(super) fn ensure(run_dir: &Path, env: &[(String, String)], steps: &ContainerSteps) -> Result<(), String> {
    let Some(network) = &steps.network else { return Ok(()) };
    let exists = || run_step(&steps.network_exists(network), env, run_dir, false).is_ok_and(|o| o.success());
    if exists() {
        return Ok(());
    }
    let pool = Ipv4Network::parse(&network.pool)
        .ok_or_else(|| format!("the network pool '{}' is no IPv4 network", network.pool))?;
    let _pool = FileLock::take(&steps.network_pool_lock(network));
    let listed = match run_step(&steps.network_subnets(), env, run_dir, false) {
        Ok(out) if out.success() => out.stdout,
        Ok(out) => return Err(format!("the engine could not list its networks: {}", out.words())),
        Err(e) => return Err(jobdeck_core::error_chain(&e)),
    };
    let used: Vec<Ipv4Network> = listed.split_whitespace().filter_map(Ipv4Network::parse).collect();
    let free = pool.subnets_24().filter(|candidate| !used.iter().any(|u| u.overlaps(*candidate)));
    // Another server on this machine (another data directory, so another
    // lock) may take a subnet between the listing and the creation: the
    // engine then says it is used, and the next free one is tried.
    for subnet in free.take(MAX_CREATE_TRIES) {
        match run_step(&steps.create_network(network, &subnet.to_string()), env, run_dir, false) {
            Ok(out) if out.success() => return Ok(()),
            Ok(out) if out.words().contains("already used") => continue,
            Ok(out) => {
                return Err(format!(
                    "the engine could not create the network {} on {subnet}: {}",
                    network.name,
                    out.words()
                ))
            }
            Err(e) => return Err(jobdeck_core::error_chain(&e)),
        }
    }
    Err(format!("no free /24 of executor.local.network_pool ({}) for the network {}", network.pool, network.name))
}

/// How many free subnets a supervisor tries before it gives up.
const MAX_CREATE_TRIES: usize = 32;

/// Why a container's routes could not be set.
pub(super) enum BlockError {
    /// The engine could not set the container up: its own words, which
    /// may say the job's command cannot run (the runtime checks it then).
    Init(String),
    /// A sentence naming the blocked networks and the step that failed.
    Route(String),
}

/// Sets the created container up without starting it, then adds to its
/// network namespace a `prohibit` route for each blocked network. Fails
/// closed: a container whose routes could not be set is never started.
pub(super) fn block_routes(run_dir: &Path, env: &[(String, String)], steps: &ContainerSteps) -> Result<(), BlockError> {
    let Some(network) = steps.network.as_ref().filter(|n| !n.blocked.is_empty()) else { return Ok(()) };
    match run_step(&steps.init(), env, run_dir, false) {
        Ok(out) if out.success() => {}
        Ok(out) => return Err(BlockError::Init(out.words())),
        Err(e) => return Err(BlockError::Init(jobdeck_core::error_chain(&e))),
    }
    let failed = |what: &str, words: String| {
        BlockError::Route(format!("cannot keep the job from {} ({what}): {words}", network.blocked.join(", ")))
    };
    let step = |command: Vec<String>, what: &str| match run_step(&command, env, run_dir, false) {
        Ok(out) if out.success() => Ok(out.stdout),
        Ok(out) => Err(failed(what, out.words())),
        Err(e) => Err(failed(what, jobdeck_core::error_chain(&e))),
    };
    let namespace = step(steps.network_namespace(), "finding its network namespace")?.trim().to_string();
    if namespace.is_empty() {
        return Err(failed("finding its network namespace", "the engine named none".into()));
    }
    // SAFETY: geteuid has no preconditions.
    let rootless = unsafe { libc::geteuid() } != 0;
    for blocked in &network.blocked {
        step(steps.block_route(&namespace, blocked, rootless), "adding a route")?;
    }
    Ok(())
}

/// Removes the run's network once no container is attached to it; the
/// engine refuses while one is, so the last container out removes it.
pub(super) fn remove(run_dir: &Path, env: &[(String, String)], steps: &ContainerSteps) {
    if let Some(network) = &steps.network {
        let _ = run_step(&steps.remove_network(network), env, run_dir, false);
    }
}
