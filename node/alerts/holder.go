package alerts

// holderLabel names a scheduler's job holding GPUs for people: "slurm job
// 123 (alice's train)" when labpool launched it (its name and its owner's
// known), "slurm job 123 (train)" without the owner's, "slurm job 123"
// when labpool did not launch it.
func holderLabel(holder, jobName, ownerName string) string {
	switch {
	case jobName != "" && ownerName != "":
		return holder + " (" + ownerName + "'s " + jobName + ")"
	case jobName != "":
		return holder + " (" + jobName + ")"
	}
	return holder
}
