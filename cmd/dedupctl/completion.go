package main

import (
	"github.com/spf13/cobra"
)

// newCompletionCommand replaces cobra's default one so that it has
// examples like every other command and refuses unknown shells as usage
// errors.
func newCompletionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the completion script for a shell. Load it in the current shell, or
install it where your shell looks for completions.`,
		Example: `  source <(dedupctl completion bash)
  dedupctl completion bash > /etc/bash_completion.d/dedupctl
  dedupctl completion zsh > "${fpath[1]}/_dedupctl"
  dedupctl completion fish > ~/.config/fish/completions/dedupctl.fish`,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args:                  args(cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)),
		DisableFlagsInUseLine: true,
		// The global PersistentPreRunE checks flags a completion script
		// does not need.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, argv []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch argv[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
}
