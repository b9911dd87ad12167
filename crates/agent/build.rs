//! Generates the gRPC service code for the control protocol.
//!
//! The messages are written by hand in `src/proto.rs` (prost derives) and
//! the service with `tonic_build::manual`, so building needs no `protoc`
//! and no `.proto` compiler of any kind: `cargo build` on a fresh machine
//! is enough. docs/agents.md describes the messages.

fn main() {
    let session = tonic_build::manual::Method::builder()
        .name("session")
        .route_name("Session")
        .input_type("crate::proto::AgentMessage")
        .output_type("crate::proto::ControllerMessage")
        .codec_path("tonic_prost::ProstCodec")
        .client_streaming()
        .server_streaming()
        .build();
    let service = tonic_build::manual::Service::builder()
        .name("Control")
        .package("benchlab.control.v1")
        .method(session)
        .build();
    tonic_build::manual::Builder::new().compile(&[service]);
    println!("cargo:rerun-if-changed=build.rs");
}
