package k8s

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func jobsList(ctx context.Context, p *Plane, c Caller, req ops.JobsListRequest) (ops.JobsListReply, error) {
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.JobsListReply{}, err
	}
	batch := b.Typed().BatchV1()
	out := ops.JobsListReply{Jobs: []ops.Job{}, CronJobs: []ops.CronJob{}}
	jobs, err := batch.Jobs(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	for _, j := range jobs.Items {
		job := ops.Job{Name: j.Name, Active: j.Status.Active, Succeeded: j.Status.Succeeded, Failed: j.Status.Failed}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == "True" {
				job.Complete = true
			}
		}
		for _, o := range j.OwnerReferences {
			if o.Kind == "CronJob" {
				job.CronJob = o.Name
			}
		}
		out.Jobs = append(out.Jobs, job)
	}
	crons, err := batch.CronJobs(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	for _, cj := range crons.Items {
		cron := ops.CronJob{Name: cj.Name, Schedule: cj.Spec.Schedule, Suspend: cj.Spec.Suspend != nil && *cj.Spec.Suspend}
		if t := cj.Status.LastScheduleTime; t != nil {
			cron.LastSchedule = t.UTC().Format(time.RFC3339)
		}
		out.CronJobs = append(out.CronJobs, cron)
	}
	slices.SortFunc(out.Jobs, func(a, b ops.Job) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.CronJobs, func(a, b ops.CronJob) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func jobsTrigger(ctx context.Context, p *Plane, c Caller, req ops.JobsTriggerRequest) (ops.JobsTriggerReply, error) {
	if err := required("cronJob", req.CronJob); err != nil {
		return ops.JobsTriggerReply{}, err
	}
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.JobsTriggerReply{}, err
	}
	batch := b.Typed().BatchV1()
	cj, err := batch.CronJobs(req.Namespace).Get(ctx, req.CronJob, metav1.GetOptions{})
	if err != nil {
		return ops.JobsTriggerReply{}, err
	}
	name := fmt.Sprintf("%s-manual-%d", cj.Name, p.now().Unix())
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	yes := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: req.Namespace, Labels: cj.Spec.JobTemplate.Labels,
			Annotations:     map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &yes}}},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	made, err := batch.Jobs(req.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return ops.JobsTriggerReply{}, err
	}
	return ops.JobsTriggerReply{Job: made.Name}, nil
}

func jobsDelete(ctx context.Context, p *Plane, c Caller, req ops.JobsDeleteRequest) (ops.JobsDeleteReply, error) {
	if err := required("job", req.Job); err != nil {
		return ops.JobsDeleteReply{}, err
	}
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.JobsDeleteReply{}, err
	}
	bg := metav1.DeletePropagationBackground
	if err := b.Typed().BatchV1().Jobs(req.Namespace).Delete(ctx, req.Job, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return ops.JobsDeleteReply{}, err
	}
	return ops.JobsDeleteReply{Deleted: true}, nil
}
