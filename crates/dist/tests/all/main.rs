//! Integration tests of toolhost-dist, one binary, against real parts: the real compiled
//! `calc` component, a real Debian `docker-registry` on 127.0.0.1, the real `minisign`
//! tool (both directions), and a real HTTP server (axum) on 127.0.0.1.
//!
//! Every hostile case (tampered layer, wrong pin, untrusted key, oversized body, plain HTTP
//! off loopback) is followed by a good call that must still work.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod file;
mod https;
mod oci;
mod signing;
mod support;
