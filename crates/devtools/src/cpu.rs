//! CPU time of the processes a benchmark runs, read from `/proc`: one
//! process (the ingest, the API) or a whole PostgreSQL server (its
//! postmaster, every backend and worker alive, and the children it has
//! already reaped).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// CPU time (user + system) one process has used so far.
pub(crate) fn of_process(pid: u32) -> Option<Duration> {
    let stat = ProcStat::read(pid)?;
    Some(ticks(stat.user + stat.system))
}

/// CPU time (user + system) of the PostgreSQL server whose postmaster is
/// `postmaster`: its own, its live children's, and that of children it has
/// reaped (which the kernel adds to its `cutime`/`cstime`). A backend that
/// exits between two readings moves from the second sum to the third, so
/// the total only grows.
pub(crate) fn of_postgres(postmaster: u32) -> Option<Duration> {
    let parent = ProcStat::read(postmaster)?;
    let mut total = parent.user + parent.system + parent.children_user + parent.children_system;
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        if let Some(child) = ProcStat::read(pid).filter(|stat| stat.parent == postmaster) {
            total += child.user + child.system;
        }
    }
    Some(ticks(total))
}

/// The postmaster's pid, the first line of `postmaster.pid` in the data
/// directory (readable by root or the server's own user).
pub(crate) fn postmaster_of(data_directory: &Path) -> Option<u32> {
    fs::read_to_string(data_directory.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// CPU time every process of this machine and the kernel have used so far
/// (`user + nice + system + irq + softirq` in `/proc/stat`, all processors
/// together): what a run cost the machine as a whole, the client's side
/// and the loopback between the processes included.
pub(crate) fn machine_busy() -> Option<Duration> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    busy_in(&stat)
}

/// CPU time (user + system) of this process's children that it has
/// waited for so far: after a tool run to its end (`smtp-source`), what
/// the run cost that tool.
pub(crate) fn of_reaped_children() -> Option<Duration> {
    let stat = ProcStat::read(std::process::id())?;
    Some(ticks(stat.children_user + stat.children_system))
}

/// CPU time the hypervisor gave to others while this machine's processors
/// wanted it (`steal` in `/proc/stat`, all processors together): on a
/// shared virtual machine, a stall no process of ours caused shows here.
pub(crate) fn stolen() -> Option<Duration> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stolen_in(&stat)
}

/// The first eight figures of `/proc/stat`'s first line, all processors
/// together, in clock ticks: `user nice system idle iowait irq softirq
/// steal`.
fn machine_ticks(stat: &str) -> Option<[u64; 8]> {
    let total = stat.lines().next()?.strip_prefix("cpu ")?;
    let figures: Vec<u64> = total
        .split_whitespace()
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    figures.try_into().ok()
}

fn stolen_in(stat: &str) -> Option<Duration> {
    let [.., steal] = machine_ticks(stat)?;
    Some(ticks(steal))
}

fn busy_in(stat: &str) -> Option<Duration> {
    let [user, nice, system, _idle, _iowait, irq, softirq, _steal] = machine_ticks(stat)?;
    Some(ticks(user + nice + system + irq + softirq))
}

/// The fields of `/proc/<pid>/stat` the sums need, in clock ticks.
struct ProcStat {
    parent: u32,
    user: u64,
    system: u64,
    children_user: u64,
    children_system: u64,
}

impl ProcStat {
    fn read(pid: u32) -> Option<ProcStat> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name (which may hold spaces and
        // parentheses), from `state` (field 3 of proc(5)) on.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let field = |index: usize| fields.get(index)?.parse::<u64>().ok();
        Some(ProcStat {
            parent: u32::try_from(field(1)?).ok()?,
            user: field(11)?,
            system: field(12)?,
            children_user: field(13)?,
            children_system: field(14)?,
        })
    }
}

fn ticks(count: u64) -> Duration {
    static PER_SECOND: OnceLock<u64> = OnceLock::new();
    let per_second = *PER_SECOND.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .filter(|hz| *hz > 0)
            .unwrap_or(100)
    });
    Duration::from_millis(count * 1000 / per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_figure_of_the_first_line() {
        let stat = "cpu  245086 0 45788 109811 1268 0 11525 176 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(stolen_in(stat), Some(ticks(176)));
        assert_eq!(stolen_in("cpu0 1 2 3 4 5 6 7 8\n"), None);
        if cfg!(target_os = "linux") {
            assert!(
                stolen().is_some(),
                "this machine's /proc/stat has a steal column"
            );
        }
    }

    #[test]
    fn busy_is_user_nice_system_irq_and_softirq() {
        let stat = "cpu  245086 3 45788 109811 1268 7 11525 176 0 0\n";
        assert_eq!(busy_in(stat), Some(ticks(245086 + 3 + 45788 + 7 + 11525)));
        assert_eq!(busy_in("cpu  1 2 3\n"), None);
        assert_eq!(busy_in("cpu0 1 2 3 4 5 6 7 8\n"), None);
        if cfg!(target_os = "linux") {
            assert!(machine_busy().is_some_and(|busy| busy > Duration::ZERO));
        }
    }

    #[test]
    fn the_parent_field_is_read() {
        let own = ProcStat::read(std::process::id()).expect("own stat");
        assert_eq!(own.parent, std::os::unix::process::parent_id());
    }
}
