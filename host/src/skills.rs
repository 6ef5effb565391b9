//! Skills under the trust model (docs/trust.md, "Skills"): the skills of a folder
//! (`toolhost_mcp::skills`) are offered by `serve` only as the operator approved them.
//! A skill is instructions a model reads and follows, so, unlike a plugin's tools (which
//! run sandboxed without approval), an unapproved skill is not offered at all, and a
//! skill whose content changed since its approval (any file: its manifest digest) is
//! withheld until approved again with `toolhost approve skill:NAME`.

use std::path::Path;
use std::sync::Arc;

use toolhost_trust::Lock;

pub use crate::mcp::skills::{Skill, SkillSet, load_folder, load_skill};

/// What the trust model decided for one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillState {
    /// Approved as it is: offered.
    Approved,
    /// Never approved: not offered.
    Unapproved,
    /// Changed since its approval: not offered.
    Changed,
}

/// The skills of `folder` that `lock` approves as they are, and one warning per skill
/// withheld or refused (each names the command that approves it, or why it cannot be).
pub fn offered(folder: &Path, lock: &Lock, plugins_dir: &Path) -> (SkillSet, Vec<String>) {
    let (all, problems) = load_folder(folder);
    let mut warnings: Vec<String> = problems
        .into_iter()
        .map(|(dir, why)| format!("skill {}: not offered: {}", clean(&dir), clean(&why)))
        .collect();
    let mut offered = Vec::new();
    for skill in all.skills() {
        match state(skill, lock) {
            SkillState::Approved => offered.push(Arc::clone(skill)),
            s => warnings.push(format!(
                "skill {} is {}; it is not offered until `toolhost approve skill:{} --skills {} --plugins {}`",
                skill.name,
                if s == SkillState::Changed {
                    "changed since its approval"
                } else {
                    "not approved"
                },
                skill.name,
                folder.display(),
                plugins_dir.display()
            )),
        }
    }
    (SkillSet::new(offered), warnings)
}

/// The trust state of `skill` under `lock`.
pub fn state(skill: &Skill, lock: &Lock) -> SkillState {
    match lock.skills.get(&skill.name) {
        Some(e) if e.digest == skill.digest => SkillState::Approved,
        Some(_) => SkillState::Changed,
        None => SkillState::Unapproved,
    }
}

/// What lint finds in a skill: its description and its instructions, read as a model
/// reads them.
pub fn findings(skill: &Skill) -> Vec<toolhost_lint::Finding> {
    let source = format!("skill:{}", skill.name);
    let subjects = [
        toolhost_lint::Subject::new(
            source.clone(),
            skill.name.clone(),
            skill.description(),
            serde_json::Value::Null,
        ),
        toolhost_lint::Subject::new(
            source,
            format!("{}/SKILL.md", skill.name),
            skill.instructions(),
            serde_json::Value::Null,
        ),
    ];
    let mut f: Vec<toolhost_lint::Finding> = subjects
        .iter()
        .flat_map(toolhost_lint::lint_tool)
        .filter(|f| f.location == "description")
        .collect();
    toolhost_lint::sort(&mut f);
    f
}

fn clean(s: &str) -> String {
    toolhost_trust::clean(s)
}
