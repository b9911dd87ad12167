//! benchlab-server
