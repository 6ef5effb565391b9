//! `toolhost approve skill:NAME`: approves a skill of the skills folder (`--skills DIR`,
//! else `[serve] skills`) as it is now. Shows its name, description, files (path, size,
//! digest), what changed since its approval and lint's findings on its description and
//! instructions, asks (or takes `--yes`), then pins the skill's manifest digest in the
//! lock: `serve` offers it from then on, until any of its files changes (docs/trust.md,
//! "Skills").

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use toolhost::skills::{SkillState, load_skill, state};
use toolhost::trust::clean;
use toolhost_trust::{Lock, SkillEntry};

/// Approves skill `name` of `folder` in the lock of plugins folder `dir`.
pub fn approve(folder: &Path, dir: &Path, name: &str, yes: bool) -> anyhow::Result<ExitCode> {
    if let Err(why) = toolhost::mcp::skills::check_name(name) {
        bail!("`{}` is not a skill name: {why}", clean(name));
    }
    let skill = load_skill(&folder.join(name))
        .with_context(|| format!("loading skill {name} of {}", folder.display()))?;
    let lock_path = Lock::path_in(dir);
    let mut lock = Lock::load(&lock_path)?;
    println!("skill {}  ({})", skill.name, skill.digest);
    println!("  description: {}", clean(skill.description()));
    println!("  files:");
    for f in &skill.files {
        println!(
            "    {} ({} bytes, {})",
            clean(&f.path),
            f.bytes.len(),
            f.digest
        );
    }
    let findings = toolhost::skills::findings(&skill);
    if findings.is_empty() {
        println!("  lint: no findings");
    } else {
        println!("  lint: {} finding(s)", findings.len());
        super::lint::print_findings(&findings);
    }
    match state(&skill, &lock) {
        SkillState::Approved => {
            println!("already approved as it is; nothing to do");
            return Ok(ExitCode::SUCCESS);
        }
        SkillState::Changed => println!(
            "  changed since its approval of {}",
            lock.skills
                .get(name)
                .map(|e| e.approved_at.as_str())
                .unwrap_or("")
        ),
        SkillState::Unapproved => {}
    }
    super::common::confirm(yes, &format!("approve skill {name}?"))?;
    lock.skills.insert(
        name.to_string(),
        SkillEntry {
            digest: skill.digest.clone(),
            approved_at: toolhost_trust::now_rfc3339(),
        },
    );
    lock.save(&lock_path)?;
    println!("approved skill {name}: {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}
