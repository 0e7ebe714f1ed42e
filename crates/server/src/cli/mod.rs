//! The command line: `jobdeck serve`, `jobdeck token create|list|revoke` and
//! the executors' render tools.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::http::auth;
use crate::{app, now_millis, AppState};
use jobdeck_api::Role;
use jobdeck_core::Config;
use jobdeck_store::{RoleChanged, Store};

mod render;

#[derive(Debug, Parser)]
#[command(name = "jobdeck", version, about = "Jobdeck: a console and control plane for batch jobs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the control plane and serve the console.
    Serve(ServeArgs),
    /// Manage API tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Kubernetes executor tools.
    Kube {
        #[command(subcommand)]
        command: KubeCommand,
    },
    /// Slurm executor tools.
    Slurm {
        #[command(subcommand)]
        command: SlurmCommand,
    },
    /// Supervise one replica attempt (started by the local executor).
    #[command(hide = true)]
    Supervise {
        /// The attempt's run directory.
        run_dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum KubeCommand {
    /// Print the Kubernetes objects a job would create, as YAML, without a
    /// cluster. Secret values and registry passwords are shown redacted.
    Render(RenderArgs),
}

#[derive(Debug, Args)]
struct RenderArgs {
    /// The job as JSON: a Lepton job with `metadata` and `spec`.
    #[arg(long)]
    file: PathBuf,
    /// The config file with node groups, shapes and `[executor.kubernetes]`;
    /// without one, the defaults `jobdeck serve` uses.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The node group to place the job in; default: its first allowed group.
    #[arg(long)]
    node_group: Option<String>,
    /// The namespace; default: the config's, else `default`.
    #[arg(long)]
    namespace: Option<String>,
}

#[derive(Debug, Subcommand)]
enum SlurmCommand {
    /// Print the sbatch command line and batch script of a job's first
    /// submission, without a cluster. Values from secrets are shown as
    /// `<secret NAME>`.
    Render(SlurmRenderArgs),
}

#[derive(Debug, Args)]
struct SlurmRenderArgs {
    /// The job as JSON: a Lepton job with `metadata` and `spec`.
    #[arg(long)]
    file: PathBuf,
    /// The config file with node groups, shapes and `[executor.slurm]`;
    /// without one, the defaults `jobdeck serve` uses.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The node group (partition) to place the job in; default: its first
    /// allowed group.
    #[arg(long)]
    node_group: Option<String>,
}

#[derive(Debug, Args)]
struct DataDirArg {
    /// Where the database, logs and replica working directories live.
    #[arg(long, default_value = "./jobdeck-data")]
    data_dir: PathBuf,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    #[command(flatten)]
    data: DataDirArg,
    /// A TOML file declaring node groups, shapes and the executor.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The built console (trunk's output) to serve.
    #[arg(long)]
    console_dir: Option<PathBuf>,
    /// How the local executor runs replicas, over the config's
    /// `[executor.local] mode`: `auto` (containers when a working docker or
    /// podman is installed), `process` or `container`.
    #[arg(long, value_parser = ["auto", "process", "container"])]
    local_mode: Option<String>,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Print a new token for a user, creating the user if needed.
    Create {
        /// The user the token signs in as.
        #[arg(long)]
        user: String,
        /// What the token is for, shown by `token list` (e.g. `laptop`, `ci`).
        #[arg(long, default_value = "")]
        name: String,
        /// How long the token signs in: `30d`, `12h`, … or `never`.
        #[arg(long, default_value = "90d")]
        expires: String,
        /// The user's role: a new user gets it (without it, `member`); an
        /// existing one is changed to it.
        #[arg(long, value_parser = ["viewer", "member", "admin"])]
        role: Option<String>,
        #[command(flatten)]
        data: DataDirArg,
    },
    /// List tokens (never their secrets): id, user, kind, name, created,
    /// expires, last used.
    List {
        /// Only this user's tokens.
        #[arg(long)]
        user: Option<String>,
        /// Also those revoked or expired.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        data: DataDirArg,
    },
    /// Revoke a token, and every console session made with it; its next
    /// request answers 401.
    Revoke {
        /// The token's id, from `token list`.
        id: i64,
        #[command(flatten)]
        data: DataDirArg,
    },
}

/// Runs the command line and returns the process's exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Supervise { run_dir } = &cli.command {
        // The supervisor is a plain blocking program: no runtime, no tracing
        // on the server's terminal.
        let code = jobdeck_executors::local::supervisor::run(run_dir);
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
            Command::Token { command } => token_command(command).await,
            Command::Kube { command: KubeCommand::Render(args) } => kube_render(args),
            Command::Slurm { command: SlurmCommand::Render(args) } => slurm_render(args),
            Command::Supervise { .. } => unreachable!("handled before the runtime starts"),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The whole chain: what failed, then why.
            eprintln!("error: {}", jobdeck_core::error_chain(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("JOBDECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal: a log file or the journal
    // gets plain lines.
    let colours = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ =
        tracing_subscriber::fmt().with_env_filter(filter).with_ansi(colours).with_writer(std::io::stderr).try_init();
}

/// Creates the data directory if needed and proves it is writable, so a bad
/// directory stops the server at start with a clear message.
fn prepare_data_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    // The data directory holds secret values, logs and the replicas' run
    // directories: owner-only, also when it existed before with a wider mode
    // (other users of the machine could otherwise read every job's logs).
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    let mode = std::fs::metadata(dir)
        .with_context(|| format!("cannot read the data directory {}", dir.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))
            .with_context(|| format!("cannot make the data directory {} private to its owner", dir.display()))?;
        tracing::warn!(dir = %dir.display(), "the data directory was readable by others; it is now owner-only (0700)");
    }
    let probe = dir.join(".write-test");
    std::fs::write(&probe, b"ok").with_context(|| format!("the data directory {} is not writable", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

fn open_store(data_dir: &Path) -> anyhow::Result<Store> {
    prepare_data_dir(data_dir)?;
    Ok(Store::open(&data_dir.join("jobdeck.db"))?)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Every path the server derives from the data directory reaches
    // processes that run elsewhere (a replica's supervisor, the container
    // engine given an environment file): made absolute once, here, so the
    // default `./jobdeck-data` means the directory `serve` started in.
    let data_dir = std::path::absolute(&args.data.data_dir)
        .with_context(|| format!("--data-dir: cannot resolve {}", args.data.data_dir.display()))?;
    let mut config = match &args.config {
        Some(path) => Config::from_file(path, &data_dir)?,
        None => Config::for_data_dir(&data_dir),
    };
    config.executor.local.mode = match args.local_mode.as_deref() {
        Some("process") => jobdeck_core::config::LocalMode::Process,
        Some("container") => jobdeck_core::config::LocalMode::Container,
        Some(_) => jobdeck_core::config::LocalMode::Auto,
        None => config.executor.local.mode,
    };
    config.console_dir = match args.console_dir {
        Some(dir) if dir.join("index.html").is_file() => Some(dir),
        Some(dir) => {
            anyhow::bail!(
                "the console directory {} has no index.html: build it with `trunk build --release`",
                dir.display()
            )
        }
        None if Path::new("dist/index.html").is_file() => Some(PathBuf::from("dist")),
        None => {
            tracing::warn!("no console found in ./dist; serving the API only");
            None
        }
    };
    let store = open_store(&config.data_dir)?;
    unseal(&store, &config).await?;

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr().context("cannot read the listening address")?;
    let base = format!("http://{}", printable_addr(local));
    // The executor first: a server whose executor cannot start says so
    // instead of printing a sign-in address that would never answer.
    let data_dir = config.data_dir.clone();
    let link_lifetime = config.auth.sign_in_link_lifetime;
    let state = AppState::start(store.clone(), config).await?;

    let (_, created) = store
        .ensure_user(auth::FIRST_ADMIN, Role::Admin, now_millis())
        .await
        .context("cannot create the admin user")?;
    println!("Jobdeck is listening on {base}/");
    if created {
        let request = auth::TokenRequest {
            kind: jobdeck_api::TokenKind::SignInLink,
            name: "first sign-in link".into(),
            lifetime: Some(link_lifetime),
            origin_id: None,
        };
        let issued =
            auth::issue_token(&store, auth::FIRST_ADMIN, request).await.context("cannot create the admin token")?;
        let until = issued.expires_at.map(auth::format_time).unwrap_or_default();
        println!("Sign in as admin: {base}/login#token={}", issued.secret);
        println!(
            "The link works until {until}; after that: jobdeck token create --user admin --data-dir {}",
            data_dir.display()
        );
    } else {
        println!(
            "Sign in with an existing token, or make a new one: jobdeck token create --user admin --data-dir {}",
            data_dir.display()
        );
    }
    let limits = state.config.limits.clone();
    let audit = state.audit.clone();
    let served = crate::http::listener::serve(listener, app(state), &limits, shutdown_signal()).await;
    // Every answered request's entry is written before the process ends.
    audit.flush().await;
    served.context("the server stopped")
}

/// Gives the store the key that seals secret values (creating it beside
/// the data directory on a first start), then seals what is not sealed with
/// it yet: values from before sealing, and values of a key being rotated
/// out. A lost key is never replaced while sealed values exist.
async fn unseal(store: &Store, config: &Config) -> anyhow::Result<()> {
    use jobdeck_store::sealing::{KeySource, SealingKeys};
    let location = config.secrets.key_location(&config.data_dir).map_err(anyhow::Error::msg)?;
    let source = match location {
        jobdeck_core::config::KeyLocation::File(path) => KeySource::File(path),
        jobdeck_core::config::KeyLocation::Env(name) => KeySource::Env(name),
    };
    let may_create = !store.holds_sealed_values().await.context("cannot read the secrets")?;
    let (keys, created) = SealingKeys::load(&source, &config.secrets.previous_key_files, may_create)
        .context("cannot load the key that seals secret values (docs/security.md, \"Secrets at rest\")")?;
    if created {
        if let KeySource::File(path) = &source {
            println!(
                "Created the key that seals secret values: {} (back it up apart from the data directory)",
                path.display()
            );
        }
    }
    store.use_keys(keys);
    let sealed = store.seal_stored_secrets().await.context("cannot seal the stored secret values")?;
    if sealed > 0 {
        tracing::info!(sealed, "secret values sealed with the current key");
    }
    Ok(())
}

/// The address to print: a wildcard listen address is reachable on loopback.
fn printable_addr(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}

async fn token_command(command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create { user, name, expires, role, data } => {
            let role = role.as_deref().and_then(Role::parse);
            token_create(&user, &name, &expires, role, &data.data_dir).await
        }
        TokenCommand::List { user, all, data } => token_list(user, all, &data.data_dir).await,
        TokenCommand::Revoke { id, data } => token_revoke(id, &data.data_dir).await,
    }
}

async fn token_create(
    user: &str,
    name: &str,
    expires: &str,
    role: Option<Role>,
    data_dir: &Path,
) -> anyhow::Result<()> {
    if user.is_empty() || user.len() > 64 || user.chars().any(|c| c.is_control()) {
        anyhow::bail!("--user must be 1 to 64 printable characters");
    }
    let named = jobdeck_api::TokenCreate { name: name.to_string(), expires_in_days: None };
    if let Some(problems) = named.problems().get("name") {
        anyhow::bail!("--name: {}", problems.join("; "));
    }
    let lifetime = match expires.trim() {
        "never" => None,
        text => Some(
            jobdeck_core::config::parse_duration(text)
                .map_err(|e| anyhow::anyhow!("--expires: {e}, or 'never'"))
                .and_then(|d| if d.is_zero() { anyhow::bail!("--expires must be longer than 0") } else { Ok(d) })?,
        ),
    };
    let store = open_store(data_dir)?;
    let role_note = match role {
        None => String::new(),
        Some(role) => {
            let (_, created) = store.ensure_user(user, role, now_millis()).await.context("cannot create the user")?;
            match store.set_user_role(user, role).await.context("cannot change the user's role")? {
                RoleChanged::LastAdmin => {
                    anyhow::bail!("{user} is the workspace's only admin: make someone else an admin first")
                }
                RoleChanged::NoSuchUser => anyhow::bail!("the user {user} vanished while its role was set"),
                RoleChanged::Changed(_) if created => format!("; new {} {user}", role.as_str()),
                RoleChanged::Changed(_) => format!("; {user} is now a {}", role.as_str()),
            }
        }
    };
    let request =
        auth::TokenRequest { kind: jobdeck_api::TokenKind::Api, name: name.to_string(), lifetime, origin_id: None };
    let issued = auth::issue_token(&store, user, request).await.context("cannot create the token")?;
    // The token alone on standard output, so `$(jobdeck token create …)`
    // captures it; what it is, on standard error.
    println!("{}", issued.secret);
    let until =
        issued.expires_at.map_or("never expires".to_string(), |at| format!("expires {}", auth::format_time(at)));
    eprintln!(
        "token {} for {user}; {until}; revoke it with `jobdeck token revoke {}`{role_note}",
        issued.id, issued.id
    );
    Ok(())
}

async fn token_list(user: Option<String>, all: bool, data_dir: &Path) -> anyhow::Result<()> {
    let store = open_store(data_dir)?;
    let now = now_millis();
    let tokens = store.list_tokens(user).await.context("cannot read the tokens")?;
    let time = |at: Option<i64>, none: &str| at.map_or(none.to_string(), auth::format_time);
    let mut rows = vec![["ID", "USER", "KIND", "NAME", "CREATED", "EXPIRES", "LAST USED", "STATE"].map(String::from)];
    for token in tokens.into_iter().filter(|t| all || t.is_live(now)) {
        let state = match (token.revoked_at, token.expires_at) {
            (Some(_), _) => "revoked",
            (None, Some(at)) if at <= now => "expired",
            _ => "active",
        };
        rows.push([
            token.id.to_string(),
            token.user,
            token.kind.as_str().to_string(),
            if token.name.is_empty() { "-".into() } else { token.name },
            auth::format_time(token.created_at),
            time(token.expires_at, "never"),
            time(token.last_used_at, "never"),
            state.to_string(),
        ]);
    }
    print!("{}", table(&rows));
    Ok(())
}

/// Rows as columns padded to their widest cell.
fn table(rows: &[[String; 8]]) -> String {
    let mut widths = [0usize; 8];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

async fn token_revoke(id: i64, data_dir: &Path) -> anyhow::Result<()> {
    let store = open_store(data_dir)?;
    let Some(token) = store.token(id).await.context("cannot read the tokens")? else {
        anyhow::bail!("there is no token {id}: `jobdeck token list` shows them");
    };
    let revoked = store.revoke_token(id, now_millis()).await.context("cannot revoke the token")?;
    match revoked {
        0 => println!("token {id} of {} was already revoked", token.user),
        1 => println!("revoked token {id} of {}", token.user),
        n => println!("revoked token {id} of {} and {} console sessions made with it", token.user, n - 1),
    }
    Ok(())
}

fn slurm_render(args: SlurmRenderArgs) -> anyhow::Result<()> {
    let config = match &args.config {
        Some(path) => Config::from_file(path, Path::new("."))?,
        None => Config::for_data_dir("."),
    };
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let script = render::slurm_job_file(&text, &config, args.node_group.as_deref())?;
    print!("{script}");
    Ok(())
}

fn kube_render(args: RenderArgs) -> anyhow::Result<()> {
    let config = match &args.config {
        // The data directory is not used by a render.
        Some(path) => Config::from_file(path, Path::new("."))?,
        None => Config::for_data_dir("."),
    };
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let yaml = render::kube_job_file(&text, &config, args.node_group.as_deref(), args.namespace.as_deref())?;
    print!("{yaml}");
    Ok(())
}
