//go:build linux

package cmd

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/verl-score/verl-score/config"
	"github.com/verl-score/verl-score/progress"
	"github.com/verl-score/verl-score/sandbox/image"
	"github.com/verl-score/verl-score/sandbox/swerun"
)

// newImagesCmd is the operator's view of the image store that repository
// tasks unpack their images into.
func newImagesCmd(s Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "images",
		Short: "Pull, import, list and prune the images repository tasks run in",
		Long: `The image store (--image-store, by default the user's cache directory,
verl-score/images) holds every image repository tasks have used: unpacked once
each, shared by every run and serve process on the machine, and the layers
pulled from registries, each kept once however many images share it.

  images pull REF...    fetch images from their registries and unpack them
  images import PATH... put OCI layouts, docker save archives or root
                        filesystem directories into the store
  images ls             list the store's images, least recently used first
  images prune          evict the least recently used images no process is
                        using, down to --image-store-max-gb (or all: --all)

Rows then find a pulled or imported image by its name with no --images.` + imagesExitHelp,
		Example: `  verl-score images pull swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest
  verl-score images import ./images/calc.tar
  verl-score images ls
  verl-score images prune --image-store-max-gb 200`,
	}
	c.AddCommand(newImagesPullCmd(s), newImagesImportCmd(s), newImagesLsCmd(s), newImagesPruneCmd(s))
	return c
}

// imagesStore opens the store the settings name.
func imagesStore(loader *config.Loader) (*config.Config, *image.Store, error) {
	cfg, err := loadConfig(loader)
	if err != nil {
		return nil, nil, err
	}
	dir := cfg.ImageStore
	if dir == "" {
		dir = swerun.DefaultImageStore()
	}
	st, err := image.OpenStore(dir)
	return cfg, st, err
}

func newImagesPullCmd(s Streams) *cobra.Command {
	var loader *config.Loader
	c := &cobra.Command{
		Use:   "pull REF...",
		Short: "Fetch images from their registries into the store and unpack them",
		Long: `Pull fetches each image (an index resolved to linux on this machine's
architecture) from its registry: the layers the store lacks, resumed where an
earlier pull stopped, each checked against its digest. It then unpacks it.
Credentials come from --registry-auth and Docker's configuration.` + imagesExitHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, refs []string) error {
			cfg, st, err := imagesStore(loader)
			if err != nil {
				return err
			}
			var failed []string
			for _, ref := range refs {
				add, done := progress.Bytes(s.ErrOut, "pulling "+ref)
				p, err := st.Pull(c.Context(), ref, image.PullOptions{Auth: cfg.SWE.Auth, Progress: add})
				done(err)
				if err != nil {
					failed = append(failed, ref)
					continue
				}
				img, err := p.Image()
				if err == nil {
					add, done := progress.Bytes(s.ErrOut, "unpacking "+ref)
					var u *image.Unpacked
					u, err = st.Unpack(img, []string{p.Ref}, p.Ref+"@"+p.Digest.String(), add)
					done(err)
					if err == nil {
						fmt.Fprintf(s.Out, "%s\t%s\tid %s\t%d layers (%d in the store already)\t%.1f MB fetched of %.1f MB\n",
							p.Ref, p.Digest, u.ID[:12], p.Layers, p.Shared, mb(p.Fetched), mb(p.Bytes))
					}
				}
				if err != nil {
					fmt.Fprintf(s.ErrOut, "verl-score: %s: %v\n", ref, err)
					failed = append(failed, ref)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d images not pulled: %s", len(failed), len(refs), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	loader = config.AddFlags(c.Flags(), config.Images)
	return c
}

func newImagesImportCmd(s Streams) *cobra.Command {
	var loader *config.Loader
	var names []string
	c := &cobra.Command{
		Use:   "import PATH...",
		Short: "Put OCI layouts, docker save archives or root filesystems into the store",
		Long: `Import unpacks each image of an OCI layout directory or a docker save
archive into the store, under the names the layout or archive records
(and --name), so rows find it by name with no --images; a plain root
filesystem directory is unpacked as an image rows name by its path.` + imagesExitHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, paths []string) error {
			_, st, err := imagesStore(loader)
			if err != nil {
				return err
			}
			for _, path := range paths {
				if image.IsRootfs(path) {
					add, done := progress.Bytes(s.ErrOut, "importing "+path)
					u, err := st.ImportDir(path, add)
					done(err)
					if err != nil {
						return err
					}
					fmt.Fprintf(s.Out, "%s\tid %s\t%.1f MB\n", path, u.ID[:16], mb(u.Meta.Bytes))
					continue
				}
				cat, err := image.OpenPath(path)
				if err != nil {
					return err
				}
				for _, e := range cat.Entries() {
					img, err := e.Open()
					if err != nil {
						return fmt.Errorf("%s: %w", path, err)
					}
					refs := append(append([]string{}, e.Names...), names...)
					add, done := progress.Bytes(s.ErrOut, "importing "+strings.Join(refs, ", ")+" from "+path)
					u, pulls, err := st.Import(img, refs, path, add)
					done(err)
					if err != nil {
						return err
					}
					var named []string
					for _, p := range pulls {
						named = append(named, p.Ref)
					}
					if len(named) == 0 {
						named = []string{"(no name: give one with --name)"}
					}
					fmt.Fprintf(s.Out, "%s\tid %s\t%.1f MB\n", strings.Join(named, ", "), u.ID[:12], mb(u.Meta.Bytes))
				}
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&names, "name", nil, "also name the imported image so (a reference, e.g. "+
		"swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest); repeatable")
	loader = config.AddFlags(c.Flags(), config.Images)
	return c
}

func newImagesLsCmd(s Streams) *cobra.Command {
	var loader *config.Loader
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List the store's images, least recently used first",
		Long: `Ls lists the store's unpacked images, least recently used first (the order
prune evicts them in): the store ID (the configuration's digest), the size
unpacked, the last use, whether a process holds it now, and its names.` + imagesExitHelp,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, st, err := imagesStore(loader)
			if err != nil {
				return err
			}
			u, err := st.List()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(s.Out, u)
			}
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tMB\tFILES\tLAST USED\tIN USE\tNAMES")
			for _, im := range u.Images {
				inUse := ""
				if im.InUse {
					inUse = "yes"
				}
				names := itemNames(im)
				if len(names) == 0 {
					names = []string{"(" + im.Source + ")"}
				}
				fmt.Fprintf(tw, "%s\t%.1f\t%d\t%s\t%s\t%s\n", im.ID[:min(12, len(im.ID))], mb(im.Bytes), im.Files,
					ago(im.LastUsed), inUse, strings.Join(names, ", "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "%s: %d images, %.1f MB unpacked, %.1f MB of layers in %d blobs\n", st.Dir(),
				len(u.Images), mb(u.ImageBytes), mb(u.BlobBytes), u.Blobs)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	loader = config.AddFlags(c.Flags(), config.Images)
	return c
}

func newImagesPruneCmd(s Streams) *cobra.Command {
	var loader *config.Loader
	var all bool
	c := &cobra.Command{
		Use:   "prune",
		Short: "Evict the least recently used images no process is using",
		Long: `Prune evicts the store's least recently used images until it holds at most
--image-store-max-gb (unpacked trees and fetched layers), or every image with
--all. An image a run or serve process holds is never removed; the layers no
remaining image names go with the last one.` + imagesExitHelp,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, st, err := imagesStore(loader)
			if err != nil {
				return err
			}
			limit := int64(cfg.SWE.StoreMaxGB * (1 << 30))
			switch {
			case all:
				limit = -1
			case cfg.SWE.StoreMaxGB <= 0:
				return usageErrorf("images prune: give --image-store-max-gb or --all")
			}
			p, err := st.Prune(limit)
			if err != nil {
				return err
			}
			for _, im := range p.Images {
				fmt.Fprintf(s.Out, "evicted %s\t%.1f MB\tlast used %s\t%s\n", im.ID[:min(12, len(im.ID))], mb(im.Bytes),
					ago(im.LastUsed), strings.Join(itemNames(im), ", "))
			}
			fmt.Fprintf(s.Out, "%d images evicted, %d blobs removed, %.1f MB freed", len(p.Images), p.Blobs, mb(p.Bytes))
			if p.Kept > 0 {
				fmt.Fprintf(s.Out, "; %d in use kept", p.Kept)
			}
			fmt.Fprintln(s.Out)
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "evict every image no process is using")
	loader = config.AddFlags(c.Flags(), config.Images)
	return c
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// itemNames are the names an image of the store is known by: those pulled
// or imported to it, then those its unpack recorded.
func itemNames(im image.Item) []string {
	return dedupe(append(append([]string{}, im.Refs...), im.Names...))
}

// ago is a time as a duration before now, to the second.
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

const imagesExitHelp = `

EXIT STATUS
  0  done
  1  failed (an image could not be pulled, imported or read; the store could not be opened)
  2  usage error
`
