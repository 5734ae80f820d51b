fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
