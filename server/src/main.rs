//! `chingest`: `serve`, `config --print-default`, `hash-password`, `backup`, `restore`.
//! anyhow lives only here; the library has typed errors.

use std::path::PathBuf;
use std::process::ExitCode;

use chingest::backup::sign::Key;
use clap::{Parser, Subcommand};

/// chingest: a durable InfluxDB-compatible ingest server on embedded ClickHouse (chDB).
///
/// Configuration comes from an optional TOML file (see `chingest config
/// --print-default` for every option, its default and meaning), then from
/// environment variables CHINGEST_<SECTION>__<KEY> (e.g.
/// CHINGEST_SERVER__LISTEN=0.0.0.0:8086, CHINGEST_STORAGE__DATA_DIR=/var/lib/chingest,
/// CHINGEST_AUTH__ENABLED=true). RUST_LOG overrides the log filter.
#[derive(Parser)]
#[command(name = "chingest", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (default: 127.0.0.1:8086, data under ./data).
    Serve {
        /// TOML configuration file; every key is optional.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Configuration helpers.
    Config {
        /// Print the annotated default configuration.
        #[arg(long)]
        print_default: bool,
        /// Print the effective configuration (file + environment) as TOML.
        #[arg(long, value_name = "FILE", conflicts_with = "print_default")]
        check: Option<Option<PathBuf>>,
    },
    /// Print a salted hash of a password or token for `[[auth.users]]`.
    HashPassword {
        /// The secret to hash.
        secret: String,
    },
    /// Back up a running server's databases (points, retention policies, continuous
    /// queries) into a directory, through its HTTP API.
    Backup {
        #[command(flatten)]
        server: ServerArgs,
        /// Points per query (each page is one InfluxQL answer).
        #[arg(long, default_value_t = 50_000)]
        page_rows: usize,
        /// Only points at or after this time (RFC3339, as `influxd backup -start`).
        #[arg(long)]
        start: Option<String>,
        /// Only points before this time (RFC3339, as `influxd backup -end`).
        #[arg(long)]
        end: Option<String>,
        /// Sign the backup with the key in this file (HMAC-SHA-256 of the manifest, which
        /// lists every file's SHA-256; e.g. `head -c 32 /dev/urandom > backup.key`).
        #[arg(long, value_name = "FILE")]
        key_file: Option<PathBuf>,
        /// The backup directory (created).
        dir: PathBuf,
    },
    /// Restore a backup directory into a running server, through its HTTP API: verified
    /// whole first (every file's digest, every statement), then all of it or nothing.
    Restore {
        #[command(flatten)]
        server: ServerArgs,
        /// Refuse the backup unless it is signed with the key in this file.
        #[arg(long, value_name = "FILE")]
        key_file: Option<PathBuf>,
        /// Restore the backup's InfluxQL users too (names the target lacks), not its admins.
        #[arg(long)]
        users: bool,
        /// With --users: its admins too.
        #[arg(long, requires = "users")]
        admins: bool,
        /// The backup directory.
        dir: PathBuf,
    },
}

/// The server `backup` and `restore` talk to.
#[derive(clap::Args)]
struct ServerArgs {
    /// The server's URL.
    #[arg(long, default_value = "http://127.0.0.1:8086")]
    url: String,
    /// Only this database (repeatable; default: all).
    #[arg(long = "database", short = 'd', value_name = "DB")]
    databases: Vec<String>,
    /// User (an admin), when auth is on.
    #[arg(long, short = 'u')]
    user: Option<String>,
    /// Its password (better from the environment than the command line).
    #[arg(long, short = 'p', env = "CHINGEST_PASSWORD", hide_env_values = true)]
    password: Option<String>,
}

impl ServerArgs {
    fn target(self) -> chingest::backup::Target {
        chingest::backup::Target {
            url: self.url.trim_end_matches('/').to_string(),
            user: self.user.map(|u| (u, self.password.unwrap_or_default())),
            databases: self.databases,
            start: None,
            end: None,
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chingest: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { config } => {
            // Before any thread allocates (`heap.rs`: freed answers kept for
            // the next request rather than faulted in again).
            let kept = chingest::heap::keep_freed_memory();
            let config = chingest::Config::load(config.as_deref(), std::env::vars())?;
            chingest::logging::init(&config.server.log, &config.log);
            if !kept {
                tracing::info!(
                    "GLIBC_TUNABLES sets the allocator: its thresholds left as they are"
                );
            }
            // Named so a profile (`perf report --sort comm`, `top -H`) tells the
            // parallel line-protocol parse apart from the engine's threads.
            rayon::ThreadPoolBuilder::new()
                .thread_name(|i| format!("chingest-parse-{i}"))
                .build_global()?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            // On this thread, not spawned onto a worker: with the accept loop
            // on a worker the 600k soak's p99 rose from 199–235 to 297–309 ms
            // (same-run A/B, test_results/history/ab_soak.md).
            rt.block_on(chingest::run(config))?;
            // The engine and WAL are closed; don't wait for stray blocking tasks.
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
            Ok(())
        }
        Command::Config {
            print_default,
            check,
        } => {
            if print_default || check.is_none() {
                print!("{}", chingest::Config::default_toml());
            } else if let Some(path) = check {
                let config = chingest::Config::load(path.as_deref(), std::env::vars())?;
                print!("{}", toml::to_string_pretty(&config)?);
            }
            Ok(())
        }
        Command::HashPassword { secret } => {
            println!("{}", chingest::SecretHash::new(&secret));
            Ok(())
        }
        Command::Backup {
            server,
            page_rows,
            start,
            end,
            key_file,
            dir,
        } => {
            let target = chingest::backup::Target {
                start,
                end,
                ..server.target()
            };
            let key = key_file.as_deref().map(Key::read).transpose()?;
            let s = chingest::backup::backup(target, &dir, page_rows.max(1), key.as_ref())?;
            println!(
                "backed up {} database(s), {} point(s) in {} file(s){} to {}{}",
                s.databases,
                s.points,
                s.files,
                s.users
                    .map(|n| format!(" and {n} user(s)"))
                    .unwrap_or_default(),
                dir.display(),
                if s.signed { ", signed" } else { "" }
            );
            if let Some(why) = &s.users_left_out {
                eprintln!("users not backed up: {why}");
            }
            if s.skipped > 0 {
                anyhow::bail!(
                    "{} point(s) have a name with a newline, which line protocol cannot hold: left out",
                    s.skipped
                );
            }
            Ok(())
        }
        Command::Restore {
            server,
            key_file,
            users,
            admins,
            dir,
        } => {
            let options = chingest::backup::RestoreOptions {
                key: key_file.as_deref().map(Key::read).transpose()?,
                users,
                admins,
            };
            let s = chingest::backup::restore(server.target(), &dir, &options)?;
            println!(
                "restored {} database(s), {} point(s){} from {}{}",
                s.databases,
                s.points,
                s.users
                    .map(|(added, kept)| format!(
                        ", {added} user(s) added ({kept} kept as they were)"
                    ))
                    .unwrap_or_default(),
                dir.display(),
                if s.signed { " (signature checked)" } else { "" }
            );
            if s.admins_left_out > 0 {
                eprintln!(
                    "{} admin user(s) of the backup not restored (--admins restores them)",
                    s.admins_left_out
                );
            }
            if s.users_not_restored {
                eprintln!("the backup's users were not restored (--users restores them)");
            }
            Ok(())
        }
    }
}
