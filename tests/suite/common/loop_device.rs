//! A loop device on a temporary file: a real block device no one else
//! writes to, so block I/O counted on it is exactly the test's.

use std::path::PathBuf;
use std::process::Command;

/// A loop device on a 16 MiB temporary file, detached when dropped.
pub(crate) struct LoopDevice {
    /// Its node, `/dev/loopN`.
    pub(crate) dev: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoopDevice {
    pub(crate) fn new() -> LoopDevice {
        let dir = super::tempdir();
        let file = dir.path().join("disk");
        std::fs::File::create(&file)
            .and_then(|f| f.set_len(16 << 20))
            .expect("backing file");
        let out = super::output(
            Command::new("losetup")
                .arg("--find")
                .arg("--show")
                .arg(&file),
        );
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        LoopDevice { dev, _dir: dir }
    }

    /// Its name in /proc/partitions (`loop0`).
    pub(crate) fn name(&self) -> String {
        let name = self.dev.file_name().expect("a device name");
        name.to_string_lossy().into_owned()
    }

    /// The kernel's dev_t of the device as the block tracepoints hold it
    /// (major << 20 | minor).
    pub(crate) fn kernel_dev(&self) -> u64 {
        let text = std::fs::read_to_string(format!("/sys/block/{}/dev", self.name()))
            .expect("the device's numbers");
        let (major, minor) = text.trim().split_once(':').expect("MAJOR:MINOR");
        (major.parse::<u64>().expect("major") << 20) | minor.parse::<u64>().expect("minor")
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}
