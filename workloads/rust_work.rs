// build: -C opt-level=1 -C force-frame-pointers=yes -g
// rust_work [ROUNDS]: burns CPU in rust_work::hot::spin (#[inline(never)]),
// called from main. Default 100 rounds, about 10 ms each.

mod hot {
    #[inline(never)]
    pub fn spin(units: u64) -> u64 {
        let mut x = std::hint::black_box(1u64);
        for _ in 0..units * 8_000_000 {
            // black_box keeps LLVM from folding the recurrence.
            x = std::hint::black_box(
                x.wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407),
            );
        }
        std::hint::black_box(x)
    }
}

fn main() {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let mut sum = 0u64;
    for _ in 0..rounds {
        sum = sum.wrapping_add(hot::spin(1));
    }
    std::hint::black_box(sum);
}
