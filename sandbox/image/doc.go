// Package image finds the environments of repository tasks and unpacks
// them once: container images in OCI layouts and `docker save` archives
// (read with go-containerregistry, no daemon), and plain root-filesystem
// directories. An image is flattened (whiteouts applied) into a store by
// its ID, safely against concurrent processes and a kill mid-unpack, with
// its files' owners shifted into the range the sandbox's user namespaces
// map (IDBase), so that root in a rollout owns the image's root files and
// nothing on the host.
package image
