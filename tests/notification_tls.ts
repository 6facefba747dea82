/**
 * A self-signed certificate for "pinned.example" (valid for 100 years from November 2026), made for the tests
 * with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj /CN=pinned.example
 * -addext subjectAltName=DNS:pinned.example -days 36500`. Test material only: it protects nothing.
 */
export const PINNED_CERT = `-----BEGIN CERTIFICATE-----
MIIBuDCCAV2gAwIBAgIUWzqtzIqhRWsOilGXqJ3U+pq6x/4wCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOcGlubmVkLmV4YW1wbGUwIBcNMjYxMTIxMDMwNjAzWhgPMjEy
NjEwMjgwMzA2MDNaMBkxFzAVBgNVBAMMDnBpbm5lZC5leGFtcGxlMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAE3nYdNbB39GtMaHfPfBoPmNrElsDGxcTg/kisftEn
OYYUOAUD8q5s4Say68mPusay+q1WI5u0LXoUUhpl3jBQZqOBgDB+MB0GA1UdDgQW
BBTfCN8slXYfIXRlE1nYF5ilXLRvOzAfBgNVHSMEGDAWgBTfCN8slXYfIXRlE1nY
F5ilXLRvOzAZBgNVHREEEjAQgg5waW5uZWQuZXhhbXBsZTAMBgNVHRMBAf8EAjAA
MBMGA1UdJQQMMAoGCCsGAQUFBwMBMAoGCCqGSM49BAMCA0kAMEYCIQDFojWMC+4b
NTLKEAyxMDmrIXa2xv8r+sBuPp9CPV1g+QIhAI8/xSHupwESWSh7Ac/zfZ/I9Acq
45yOBw0nN8wuxJeC
-----END CERTIFICATE-----`;

/** The key of {@linkcode PINNED_CERT}. */
export const PINNED_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUYsfwdN6NDFQkl+Z
afdYm5N3m2nHgA5QkHqdcXZONqWhRANCAATedh01sHf0a0xod898Gg+Y2sSWwMbF
xOD+SKx+0Sc5hhQ4BQPyrmzhJrLryY+6xrL6rVYjm7QtehRSGmXeMFBm
-----END PRIVATE KEY-----`;
