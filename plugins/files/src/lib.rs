//! `files`: read, write and list files. The host decides which folders it may touch:
//! `read`/`write` in `files.toml` become read-only/read-write preopens, granted only
//! because these tools declare Read and Write.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Permission, Tool, ToolError};

/// A path.
#[derive(Deserialize, JsonSchema)]
struct PathArg {
    /// Absolute path of the file or folder.
    path: String,
}

/// A path and the text to write there.
#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// Absolute path of the file.
    path: String,
    /// The new content.
    content: String,
}

fn io(path: &str, e: std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound => {
            ToolError::denied(format!("{path}: {e} (only the folders granted by the host policy are visible)"))
        }
        _ => ToolError::failed(format!("{path}: {e}")),
    }
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("read_file", "Reads a UTF-8 text file and returns its content", |a: PathArg| {
            std::fs::read_to_string(&a.path).map_err(|e| io(&a.path, e))
        })
        .permissions([Permission::Read]),
        Tool::new("write_file", "Writes text to a file, replacing its content", |a: WriteArgs| {
            std::fs::write(&a.path, a.content.as_bytes()).map_err(|e| io(&a.path, e))?;
            Ok(format!("wrote {} bytes to {}", a.content.len(), a.path))
        })
        .permissions([Permission::Write]),
        Tool::new("list_dir", "Lists the entries of a folder, sorted by name", |a: PathArg| {
            let mut names = std::fs::read_dir(&a.path)
                .map_err(|e| io(&a.path, e))?
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            names.sort();
            Ok(names)
        })
        .permissions([Permission::Read]),
    ]
}

toolhost_sdk::export!(tools);
