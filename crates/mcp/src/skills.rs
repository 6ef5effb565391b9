//! Agent Skills served over MCP (the `io.modelcontextprotocol/skills` extension, SEP-2640;
//! docs/mcp.md, "Skills"): a folder of skill directories, each with a `SKILL.md` whose YAML
//! frontmatter names and describes it, loaded, validated and bounded into a [`SkillSet`]
//! that `serve` offers through `skills/list`, `skills/get` and `resources/read` of
//! `skill://NAME/FILE` URIs.
//!
//! Rules (the extension's, and toolhost's bounds on what a folder may make it hold):
//! - A skill is a directory whose `SKILL.md` starts with YAML frontmatter between `---`
//!   lines, with string `name` and `description`. The name follows the Agent Skills rules
//!   (1–64 characters of `a-z`, `0-9` and `-`, no leading, trailing or double `-`) and
//!   equals the directory's name; the description is 1–1024 characters.
//! - Every regular file under the directory is part of the skill, except names starting
//!   with `.`; at most [`MAX_FILES`] files and [`MAX_SKILL_BYTES`] bytes (the extension's
//!   limits), at most [`MAX_DEPTH`] folders deep. A symbolic link anywhere refuses the
//!   skill (it could point outside the folder). The frontmatter is at most
//!   [`MAX_FRONTMATTER_BYTES`] and parsed with `serde-saphyr`'s default budget (aliases,
//!   depth), so a YAML bomb is an error, not a hang.
//! - A folder holds at most [`MAX_SKILLS`] skills and [`MAX_FOLDER_BYTES`] in all; what
//!   is past either bound is refused with a problem, as is each skill that breaks a rule.
//!   A refused skill is never served; the others are.
//! - Files are read once, at load, and served from memory: what a client reads is what
//!   the digests in the skill's entry describe, whatever happens on disk afterwards.
//! - A skill's [`Skill::digest`] covers every file's path and digest: the value an
//!   operator's approval pins (`toolhost approve skill:NAME`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The extension's id.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// Most files in one skill (the extension's limit).
pub const MAX_FILES: usize = 512;
/// Most bytes in one skill (the extension's limit, 16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// Most folders deep inside a skill.
pub const MAX_DEPTH: usize = 8;
/// Largest frontmatter.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// Most skills one folder offers.
pub const MAX_SKILLS: usize = 256;
/// Most bytes of all the skills of one folder together (they are held in memory).
pub const MAX_FOLDER_BYTES: u64 = 64 * 1024 * 1024;
/// How long a client may keep a listing or an entry (`ttlMs`): skills change only with
/// the folder, read at start.
pub const TTL_MS: u64 = 300_000;

/// Why a skill is refused.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A file or folder cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// No `SKILL.md` at the skill's root.
    #[error("no SKILL.md in {0}")]
    NoSkillMd(String),
    /// The frontmatter is missing or not valid.
    #[error("{path}: {why}")]
    Frontmatter {
        /// The `SKILL.md`.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The name breaks the naming rules, or is not the directory's.
    #[error("skill {dir}: {why}")]
    Name {
        /// The directory.
        dir: String,
        /// What is wrong.
        why: String,
    },
    /// Over a bound: files, bytes, depth.
    #[error("skill {dir}: {why}")]
    TooLarge {
        /// The directory.
        dir: String,
        /// Which bound.
        why: String,
    },
    /// A symbolic link inside the skill.
    #[error("skill {dir}: {path} is a symbolic link; skills are served only from regular files")]
    Symlink {
        /// The directory.
        dir: String,
        /// The link.
        path: String,
    },
}

/// One file of a skill.
#[derive(Debug)]
pub struct SkillFile {
    /// Its path in the skill, `/`-separated.
    pub path: String,
    /// Its bytes.
    pub bytes: Arc<[u8]>,
    /// "sha256:HEX" of its bytes.
    pub digest: String,
}

/// One skill, loaded and checked.
#[derive(Debug)]
pub struct Skill {
    /// Its name (the directory's).
    pub name: String,
    /// The frontmatter as JSON, verbatim.
    pub frontmatter: Value,
    /// Its files, `SKILL.md` first, then by path.
    pub files: Vec<SkillFile>,
    /// "sha256:HEX" over every file's path and digest (what an approval pins).
    pub digest: String,
}

/// What a folder of skills gave: the skills, and the problems of those refused.
#[derive(Debug, Default, Clone)]
pub struct SkillSet {
    skills: Vec<Arc<Skill>>,
}

/// What a skill file's path keeps as it is in its URI: letters, digits, `- . _ ~` and the
/// `/` between folders; every other byte is percent-encoded (the extension's URIs are
/// URIs: a space, `#`, `?` or `%` in a file name must not change what they name).
const PATH_KEEPS: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The `skill://` URI of `file` (a `/`-separated path, percent-encoded in the URI) of
/// skill `name`; the skill's own folder when `file` is empty.
pub fn uri(name: &str, file: &str) -> String {
    if file.is_empty() {
        return format!("skill://{name}");
    }
    format!(
        "skill://{name}/{}",
        percent_encoding::utf8_percent_encode(file, PATH_KEEPS)
    )
}

/// One entry of a folder of a skill (`resources/directory/read`).
#[derive(Debug)]
pub enum DirEntry<'a> {
    /// A file of the skill.
    File(&'a SkillFile),
    /// A folder in it, by its path in the skill.
    Folder(String),
}

fn sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `name` follows the Agent Skills naming rules; why not otherwise.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!(
            "the name must have 1 to 64 characters (has {})",
            name.len()
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("the name may hold only a-z, 0-9 and -".into());
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err("the name may not start or end with -, nor hold --".into());
    }
    Ok(())
}

/// The frontmatter of a `SKILL.md`'s text, parsed: a JSON object with string `name` and
/// `description`.
fn frontmatter(text: &str) -> Result<Value, String> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md must start with YAML frontmatter (a --- line)")?;
    let end = rest
        .find("\n---")
        .ok_or("the frontmatter has no closing --- line")?;
    let yaml = &rest[..end];
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!(
            "the frontmatter is over {MAX_FRONTMATTER_BYTES} bytes"
        ));
    }
    let value: Value = serde_saphyr::from_str(yaml)
        .map_err(|e| format!("the frontmatter is not valid YAML: {e}"))?;
    let obj = value
        .as_object()
        .ok_or("the frontmatter is not a mapping")?;
    for field in ["name", "description"] {
        match obj.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => return Err(format!("the frontmatter has no string `{field}`")),
        }
    }
    let description = obj["description"].as_str().unwrap_or_default();
    if description.chars().count() > 1024 {
        return Err("the description is over 1024 characters".into());
    }
    Ok(value)
}

/// The regular files under `root` (relative `/` paths), refusing links and bounds.
fn files_of(root: &Path, dir_name: &str) -> Result<Vec<(String, PathBuf)>, SkillError> {
    let io = |path: &Path, source| SkillError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(SkillError::TooLarge {
                dir: dir_name.into(),
                why: format!("folders nest more than {MAX_DEPTH} deep"),
            });
        }
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| io(&path, e))?;
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_symlink() {
                return Err(SkillError::Symlink {
                    dir: dir_name.into(),
                    path: rel,
                });
            } else if kind.is_dir() {
                stack.push((path, rel, depth + 1));
            } else if kind.is_file() {
                out.push((rel, path));
                if out.len() > MAX_FILES {
                    return Err(SkillError::TooLarge {
                        dir: dir_name.into(),
                        why: format!("more than {MAX_FILES} files"),
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| (a.0 != "SKILL.md", &a.0).cmp(&(b.0 != "SKILL.md", &b.0)));
    Ok(out)
}

/// Loads the skill in directory `dir`.
pub fn load_skill(dir: &Path) -> Result<Skill, SkillError> {
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_name(&dir_name).map_err(|why| SkillError::Name {
        dir: dir_name.clone(),
        why,
    })?;
    let listed = files_of(dir, &dir_name)?;
    if listed.first().map(|(p, _)| p.as_str()) != Some("SKILL.md") {
        return Err(SkillError::NoSkillMd(dir.display().to_string()));
    }
    let mut total = 0u64;
    let mut files = Vec::with_capacity(listed.len());
    for (rel, path) in listed {
        let len = std::fs::symlink_metadata(&path)
            .map_err(|source| SkillError::Io {
                path: path.display().to_string(),
                source,
            })?
            .len();
        total += len;
        if total > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge {
                dir: dir_name,
                why: format!("more than {MAX_SKILL_BYTES} bytes"),
            });
        }
        let bytes: Arc<[u8]> = std::fs::read(&path)
            .map_err(|source| SkillError::Io {
                path: path.display().to_string(),
                source,
            })?
            .into();
        let digest = sha256(&bytes);
        files.push(SkillFile {
            path: rel,
            bytes,
            digest,
        });
    }
    let skill_md = dir.join("SKILL.md").display().to_string();
    let text = std::str::from_utf8(&files[0].bytes).map_err(|_| SkillError::Frontmatter {
        path: skill_md.clone(),
        why: "SKILL.md is not UTF-8".into(),
    })?;
    let frontmatter = frontmatter(text).map_err(|why| SkillError::Frontmatter {
        path: skill_md,
        why,
    })?;
    let name = frontmatter["name"].as_str().unwrap_or_default().to_string();
    if name != dir_name {
        return Err(SkillError::Name {
            dir: dir_name,
            why: format!(
                "its frontmatter names it `{}`, not its directory's name",
                name.escape_debug()
            ),
        });
    }
    let manifest: String = files
        .iter()
        .map(|f| format!("{}\0{}\n", f.path, f.digest))
        .collect();
    Ok(Skill {
        name,
        frontmatter,
        digest: sha256(manifest.as_bytes()),
        files,
    })
}

/// Loads every skill directory of `folder` (in name order), within the folder's bounds;
/// the problems of the skills refused, as (directory, why).
pub fn load_folder(folder: &Path) -> (SkillSet, Vec<(String, String)>) {
    let mut problems = Vec::new();
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(folder) {
        Ok(rd) => rd
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
            .collect(),
        Err(e) => {
            problems.push((folder.display().to_string(), e.to_string()));
            Vec::new()
        }
    };
    dirs.sort();
    let mut set = SkillSet::default();
    let mut total = 0u64;
    for dir in dirs {
        let shown = dir.display().to_string();
        if set.skills.len() >= MAX_SKILLS {
            problems.push((
                shown,
                format!("the folder offers at most {MAX_SKILLS} skills"),
            ));
            continue;
        }
        match load_skill(&dir) {
            Ok(skill) => {
                let bytes: u64 = skill.files.iter().map(|f| f.bytes.len() as u64).sum();
                if total + bytes > MAX_FOLDER_BYTES {
                    problems.push((
                        shown,
                        format!(
                            "the folder's skills may hold at most {MAX_FOLDER_BYTES} bytes in all"
                        ),
                    ));
                    continue;
                }
                total += bytes;
                set.skills.push(Arc::new(skill));
            }
            Err(e) => problems.push((shown, e.to_string())),
        }
    }
    (set, problems)
}

impl Skill {
    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> String {
        uri(&self.name, "SKILL.md")
    }

    /// Its description (from the frontmatter).
    pub fn description(&self) -> &str {
        self.frontmatter["description"].as_str().unwrap_or_default()
    }

    /// Its `SKILL.md` as text.
    pub fn instructions(&self) -> String {
        String::from_utf8_lossy(&self.files[0].bytes).into_owned()
    }

    /// Its entry of `skills/list` and `skills/get`: URI, frontmatter, every file with
    /// its digest and size.
    pub fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|f| {
                json!({"uri": uri(&self.name, &f.path), "digest": f.digest, "size": f.bytes.len()})
            })
            .collect();
        json!({"uri": self.uri(), "frontmatter": self.frontmatter, "resources": resources})
    }

    /// Its file at `path`, if it has one.
    pub fn file(&self, path: &str) -> Option<&SkillFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The direct children of its folder `dir` (a `/`-separated path; empty: the skill's
    /// own folder): folders, then files, each in path order. `None` when it has no such
    /// folder (a folder is one that holds a file served; `dir` naming a file is not one).
    pub fn children(&self, dir: &str) -> Option<Vec<DirEntry<'_>>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut folders = std::collections::BTreeSet::new();
        let mut files = Vec::new();
        for f in &self.files {
            let Some(rest) = f.path.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((sub, _)) => {
                    folders.insert(format!("{prefix}{sub}"));
                }
                None => files.push(DirEntry::File(f)),
            }
        }
        if folders.is_empty() && files.is_empty() {
            return None;
        }
        let mut out: Vec<DirEntry<'_>> = folders.into_iter().map(DirEntry::Folder).collect();
        out.append(&mut files);
        Some(out)
    }
}

/// The MIME type served for a skill file at `path` holding `bytes`.
pub fn mime_type(path: &str, bytes: &[u8]) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md") => "text/markdown",
        Some("json") => "application/json",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("yaml" | "yml") => "application/yaml",
        Some("html") => "text/html",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

impl SkillSet {
    /// A set of `skills` (each checked by [`load_skill`]).
    pub fn new(skills: Vec<Arc<Skill>>) -> SkillSet {
        SkillSet { skills }
    }

    /// The skills, in name order.
    pub fn skills(&self) -> &[Arc<Skill>] {
        &self.skills
    }

    /// Whether it offers no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill whose `SKILL.md` is at `uri`.
    pub fn by_uri(&self, uri: &str) -> Option<&Arc<Skill>> {
        self.skills.iter().find(|s| s.uri() == uri)
    }

    /// The file at `skill://NAME/PATH` (the URI its entry names), with its skill.
    pub fn file(&self, uri: &str) -> Option<(&Arc<Skill>, &SkillFile)> {
        let (skill, _) = self.split(uri)?;
        let file = skill
            .files
            .iter()
            .find(|f| self::uri(&skill.name, &f.path) == uri)?;
        Some((skill, file))
    }

    /// The skill and folder path of the directory URI `skill://NAME` (its own folder) or
    /// `skill://NAME/PATH` (a folder in it; PATH percent-decoded, and not valid UTF-8:
    /// none), with that folder's direct children.
    pub fn directory(&self, uri: &str) -> Option<(&Arc<Skill>, Vec<DirEntry<'_>>)> {
        let (skill, path) = self.split(uri)?;
        let path = percent_encoding::percent_decode_str(path)
            .decode_utf8()
            .ok()?;
        Some((skill, skill.children(&path)?))
    }

    /// The skill a `skill://NAME[/PATH]` URI is in, and the PATH part as written.
    fn split<'u>(&self, uri: &'u str) -> Option<(&Arc<Skill>, &'u str)> {
        let rest = uri.strip_prefix("skill://")?;
        let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
        let skill = self.skills.iter().find(|s| s.name == name)?;
        Some((skill, path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn good_skills_load_and_bad_ones_are_refused_with_why() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            r,
            "refunds/SKILL.md",
            "---\nname: refunds\ndescription: Refund requests\nlicense: MIT\n---\n# Refunds\nSee references/POLICY.md\n",
        );
        write(r, "refunds/references/POLICY.md", "policy");
        write(r, "refunds/.git/config", "ignored");
        write(
            r,
            "wrong-name/SKILL.md",
            "---\nname: other\ndescription: x\n---\n",
        );
        write(
            r,
            "Bad_Name/SKILL.md",
            "---\nname: Bad_Name\ndescription: x\n---\n",
        );
        write(r, "no-front/SKILL.md", "# no frontmatter\n");
        write(r, "no-desc/SKILL.md", "---\nname: no-desc\n---\n");
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\nname: yaml-bomb\ndescription: boom\n";
        write(r, "yaml-bomb/SKILL.md", &format!("---\n{bomb}---\n"));
        write(
            r,
            "many-files/SKILL.md",
            "---\nname: many-files\ndescription: x\n---\n",
        );
        for i in 0..=MAX_FILES {
            write(r, &format!("many-files/f/{i}.txt"), "x");
        }
        #[cfg(unix)]
        {
            write(
                r,
                "linked/SKILL.md",
                "---\nname: linked\ndescription: x\n---\n",
            );
            std::os::unix::fs::symlink("/etc/passwd", r.join("linked/passwd")).unwrap();
        }
        let (set, problems) = load_folder(r);
        let names: Vec<&str> = set.skills().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["refunds"], "{problems:?}");
        let refused: Vec<&str> = problems
            .iter()
            .map(|(d, _)| d.rsplit('/').next().unwrap())
            .collect();
        for bad in [
            "wrong-name",
            "Bad_Name",
            "no-front",
            "no-desc",
            "yaml-bomb",
            "many-files",
        ] {
            assert!(refused.contains(&bad), "{bad} not refused: {problems:?}");
        }
        #[cfg(unix)]
        assert!(refused.contains(&"linked"), "{problems:?}");
        let s = &set.skills()[0];
        assert_eq!(s.frontmatter["license"], "MIT");
        let entry = s.entry();
        let files: Vec<&str> = entry["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            files,
            [
                "skill://refunds/SKILL.md",
                "skill://refunds/references/POLICY.md"
            ]
        );
        assert_eq!(entry["resources"][1]["size"], 6);
        assert!(set.file("skill://refunds/.git/config").is_none());
        assert!(set.file("skill://refunds/references/POLICY.md").is_some());
        assert!(set.file("skill://refunds/../x").is_none());
        // The digest covers every file.
        write(r, "refunds/references/POLICY.md", "policy v2");
        let again = load_skill(&r.join("refunds")).unwrap();
        assert_ne!(again.digest, s.digest);
    }

    #[test]
    fn a_skills_folders_list_their_children_under_uris_that_name_them_exactly() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            r,
            "notes/SKILL.md",
            "---\nname: notes\ndescription: Notes\n---\n# Notes\n",
        );
        write(r, "notes/a b#1.md", "spaced");
        write(r, "notes/refs/deep/x.md", "x");
        write(r, "notes/refs/y.md", "y");
        let (set, problems) = load_folder(r);
        assert!(problems.is_empty(), "{problems:?}");
        let names = |uri: &str| -> Option<Vec<String>> {
            let (_, children) = set.directory(uri)?;
            Some(
                children
                    .iter()
                    .map(|c| match c {
                        DirEntry::Folder(p) => format!("{p}/"),
                        DirEntry::File(f) => f.path.clone(),
                    })
                    .collect(),
            )
        };
        // The skill's own folder: folders first, then files; a name with a space and a
        // `#` is one file, under a URI that encodes them.
        assert_eq!(
            names("skill://notes").unwrap(),
            ["refs/", "SKILL.md", "a b#1.md"]
        );
        assert_eq!(
            names("skill://notes/").unwrap(),
            names("skill://notes").unwrap()
        );
        assert_eq!(uri("notes", "a b#1.md"), "skill://notes/a%20b%231.md");
        let (_, f) = set.file("skill://notes/a%20b%231.md").unwrap();
        assert_eq!(&*f.bytes, b"spaced");
        assert!(set.file("skill://notes/a b#1.md").is_none());
        assert_eq!(
            names("skill://notes/refs").unwrap(),
            ["refs/deep/", "refs/y.md"]
        );
        assert_eq!(
            names("skill://notes/r%65fs").unwrap(),
            names("skill://notes/refs").unwrap()
        );
        // Not folders: a file, a path outside, a traversal, a name no skill has, a path
        // that does not decode to UTF-8, a prefix of a folder's name.
        for not in [
            "skill://notes/SKILL.md",
            "skill://notes/refs/y.md",
            "skill://notes/..",
            "skill://notes/%2e%2e",
            "skill://notes/refs/../refs",
            "skill://other",
            "skill://notes/%ff",
            "skill://notes/re",
            "file:///etc",
        ] {
            assert!(names(not).is_none(), "{not} listed");
        }
    }
}
