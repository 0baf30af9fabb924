// build: -C opt-level=1 -C force-frame-pointers=yes -g
// rust_work [ROUNDS]: burns CPU in rust_work::hot::spin (#[inline(never)]),
// called from main. Default 100 rounds, about 10 ms each. ROUNDS may be a
// CPU time ("1s"); SCRY_WORK_SCALE scales a unit (as workloads/work.h).

mod hot {
    #[inline(never)]
    pub fn spin(units: u64, unit: u64) -> u64 {
        let mut x = std::hint::black_box(1u64);
        for _ in 0..units * unit {
            // black_box keeps LLVM from folding the recurrence.
            x = std::hint::black_box(
                x.wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407),
            );
        }
        std::hint::black_box(x)
    }
}

/// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in seconds.
fn thread_seconds() -> f64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns: f64 = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    ns / 1e9
}

fn main() {
    let scale: f64 = std::env::var("SCRY_WORK_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(1.0);
    let unit = ((8_000_000.0 * scale) as u64).max(1);
    let arg = std::env::args().nth(1).unwrap_or_else(|| "100".into());
    let seconds: Option<f64> = arg.strip_suffix('s').and_then(|s| s.parse().ok());
    let rounds: u64 = arg.parse().unwrap_or(100);
    let mut sum = 0u64;
    let mut done = 0u64;
    // Time mode reads the clock (a file read) only when the rounds
    // estimated from the last reading are done, as work.h does.
    let mut check_at = 0u64;
    loop {
        match seconds {
            Some(limit) if done >= check_at => {
                let spent = thread_seconds();
                if spent >= limit {
                    break;
                }
                let left = if done > 0 && spent > 0.0 {
                    (limit - spent) * done as f64 / spent
                } else {
                    1.0
                };
                check_at = done + (left as u64).max(1);
            }
            Some(_) => {}
            None if done >= rounds => break,
            None => {}
        }
        sum = sum.wrapping_add(hot::spin(1, unit));
        done += 1;
    }
    std::hint::black_box(sum);
}
