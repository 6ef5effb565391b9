//! `files`: read, write and list files. The host decides which folders it may touch:
//! `read`/`write` in `files.toml` become read-only/read-write preopens, granted only
//! because these tools declare Read and Write.

use toolhost_sdk::{ToolError, tool};

fn io(path: &str, e: std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound => ToolError::denied(
            format!("{path}: {e} (only the folders granted by the host policy are visible)"),
        ),
        _ => ToolError::failed(format!("{path}: {e}")),
    }
}

/// Reads a UTF-8 text file and returns its content
#[tool(permissions = [read])]
fn read_file(
    /// Absolute path of the file or folder.
    path: String,
) -> Result<String, ToolError> {
    std::fs::read_to_string(&path).map_err(|e| io(&path, e))
}

/// Writes text to a file, replacing its content
#[tool(permissions = [write])]
fn write_file(
    /// Absolute path of the file.
    path: String,
    /// The new content.
    content: String,
) -> Result<String, ToolError> {
    std::fs::write(&path, content.as_bytes()).map_err(|e| io(&path, e))?;
    Ok(format!("wrote {} bytes to {}", content.len(), path))
}

/// Lists the entries of a folder, sorted by name
#[tool(permissions = [read])]
fn list_dir(
    /// Absolute path of the file or folder.
    path: String,
) -> Result<Vec<String>, ToolError> {
    let mut names = std::fs::read_dir(&path)
        .map_err(|e| io(&path, e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    names.sort();
    Ok(names)
}

toolhost_sdk::export!([read_file, write_file, list_dir]);
